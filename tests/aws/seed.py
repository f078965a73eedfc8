#!/usr/bin/env python3
"""Seeds a moto server with domains of the demo catalog, for tests/aws_moto.rs.

Reads the domain map (tests/aws/domains.toml) and, for each domain, the recorded files of the
demo catalog (fixtures/catalog/domains/<domain>/), and creates in the domain's own account
(moto switches account by the assumed role's ARN when MOTO_ACCOUNT_ID is not set):
  - the LF-tag vocabulary of ontology/lf-tags.json (with deliberate drift in one account),
  - the Glue database <domain>_curated and its tables (GetTable shape of get-table.json),
  - LF-tags on the database, each table and each column (one call per column: moto's
    add_lf_tags_to_resource replaces a column's tags),
  - the LF-tag policy grants of fixtures/catalog/roles/*.json in that account, plus one grant on
    a named resource to a non-role principal.
Moto quirks planned around: GetResourceLFTags answers HTTP 500 for a table without tags of its
own, so tables without table tags are skipped; Lake Formation denials cannot be emulated, so
tables recorded as denied get their column tags from fixtures/catalog-src/domains/<d>.py.

Prints a JSON summary (seeded and skipped tables, drift) on stdout.
Usage: seed.py --endpoint URL [--config tests/aws/domains.toml]
"""
import argparse
import json
import runpy
import sys
import tomllib
from pathlib import Path

import boto3

ROOT = Path(__file__).resolve().parents[2]
CATALOG = ROOT / "fixtures" / "catalog"
# The account whose LF-tag vocabulary drifts from the ontology (see DRIFT).
DRIFT_DOMAIN = "claims"
DRIFT = {
    "extra_values": {"sensitivity": ["restricted"]},
    "extra_keys": {"cost_center": ["cc-4711", "cc-4712"]},
    # Values no resource of the account carries (moto refuses tags whose key is not defined,
    # so a missing key would also drop the resources' tags; keys missing from an account are
    # covered by the unit tests of catalog::aws::drift).
    "missing_values": {"retention": ["30d", "1y"], "residency": ["us"]},
}
SEEDER_ROLE = "govcat-seeder"
NON_ROLE_PRINCIPAL = "arn:aws:iam::210000000000:user/etl-loader"


def load(path):
    return json.loads(Path(path).read_text(encoding="utf-8"))


def clients(endpoint, region, account):
    base = dict(endpoint_url=endpoint, region_name=region,
                aws_access_key_id="AKIDSEEDER", aws_secret_access_key="seeder-secret")
    creds = boto3.client("sts", **base).assume_role(
        RoleArn=f"arn:aws:iam::{account}:role/{SEEDER_ROLE}",
        RoleSessionName="seed", DurationSeconds=3600)["Credentials"]
    kw = dict(endpoint_url=endpoint, region_name=region,
              aws_access_key_id=creds["AccessKeyId"],
              aws_secret_access_key=creds["SecretAccessKey"],
              aws_session_token=creds["SessionToken"])
    return boto3.client("glue", **kw), boto3.client("lakeformation", **kw)


def vocabulary(domain):
    ontology = load(ROOT / "ontology" / "lf-tags.json")
    vocab = {k["key"]: [v["value"] for v in k["values"]] for k in ontology["keys"]}
    if domain == DRIFT_DOMAIN:
        for key, values in DRIFT["extra_values"].items():
            vocab[key] = vocab[key] + values
        vocab.update(DRIFT["extra_keys"])
        for key, values in DRIFT["missing_values"].items():
            vocab[key] = [v for v in vocab[key] if v not in values]
    return vocab


def add_tags(lf, resource, tags):
    """add_lf_tags_to_resource reports refused tags in Failures instead of raising."""
    failures = lf.add_lf_tags_to_resource(Resource=resource, LFTags=tags).get("Failures")
    if failures:
        raise SystemExit(f"seed: tags {tags} on {resource} refused: {failures}")


def table_input(table):
    sd = table["StorageDescriptor"]
    keep_sd = ["Columns", "Location", "InputFormat", "OutputFormat", "Compressed",
               "NumberOfBuckets", "SerdeInfo", "StoredAsSubDirectories"]
    out = {k: table[k] for k in ["Name", "Description", "Owner", "PartitionKeys", "TableType", "Parameters"]
           if k in table}
    out["StorageDescriptor"] = {k: sd[k] for k in keep_sd if k in sd}
    return out


def authored_column_tags(domain, table):
    """Column tags of a table recorded as denied, from the authoring source."""
    module = runpy.run_path(str(ROOT / "fixtures" / "catalog-src" / "domains" / f"{domain}.py"))
    for t in module["DOMAIN"]["tables"]:
        if t["name"] == table:
            return [(name, tags) for (name, _type, _desc, tags) in t["columns"] if tags]
    raise SystemExit(f"seed: table {domain}.{table} is not in fixtures/catalog-src/domains/{domain}.py")


def seed_domain(endpoint, region, d):
    name, account = d["name"], d["account_id"]
    base = CATALOG / "domains" / name
    if not (base / "domain.json").is_file():
        raise SystemExit(f"seed: domain '{name}' is not in {CATALOG}; fix tests/aws/domains.toml")
    glue, lf = clients(endpoint, region, account)
    for key, values in vocabulary(name).items():
        lf.create_lf_tag(TagKey=key, TagValues=values)
    database = f"{name}_curated"
    glue.create_database(DatabaseInput={"Name": database})
    db_tags = load(base / "database.lftags.json")["LFTagOnDatabase"]
    if not db_tags:
        raise SystemExit(f"seed: {name} has no database tags; moto answers 500 for an untagged database")
    add_tags(lf, {"Database": {"Name": database}},
             [{"TagKey": p["TagKey"], "TagValues": p["TagValues"]} for p in db_tags])
    seeded, skipped, authored = [], [], []
    for tdir in sorted((base / "tables").iterdir()):
        table = load(tdir / "get-table.json")["Table"]
        table_tags = load(tdir / "lf-table.json")["LFTagsOnTable"]
        if not table_tags:
            skipped.append({"table": table["Name"],
                            "reason": "no table-level LF-tags: moto answers GetResourceLFTags on it with HTTP 500"})
            continue
        glue.create_table(DatabaseName=database, TableInput=table_input(table))
        add_tags(lf, {"Table": {"DatabaseName": database, "Name": table["Name"]}},
                 [{"TagKey": p["TagKey"], "TagValues": p["TagValues"]} for p in table_tags])
        recorded = load(tdir / "lf-columns.json")
        if "__type" in recorded:
            columns = authored_column_tags(name, table["Name"])
            authored.append(table["Name"])
        else:
            columns = [(c["Name"], {p["TagKey"]: p["TagValues"][0] for p in c["LFTags"]})
                       for c in recorded["LFTagsOnColumns"]]
        for column, tags in columns:
            # All of a column's tags in one call: moto replaces a column's tags on each call.
            add_tags(lf, {"TableWithColumns": {"DatabaseName": database, "Name": table["Name"],
                                               "ColumnNames": [column]}},
                     [{"TagKey": k, "TagValues": [v]} for k, v in tags.items()])
        seeded.append(table["Name"])
    grants = 0
    for role_file in sorted((CATALOG / "roles").glob("*.json")):
        for entry in load(role_file)["PrincipalResourcePermissions"]:
            policy = entry["Resource"]["LFTagPolicy"]
            if policy["CatalogId"] != account:
                continue
            lf.grant_permissions(Principal=entry["Principal"], Resource={"LFTagPolicy": policy},
                                 Permissions=entry["Permissions"])
            grants += 1
    lf.grant_permissions(Principal={"DataLakePrincipalIdentifier": NON_ROLE_PRINCIPAL},
                         Resource={"Database": {"Name": database}}, Permissions=["DESCRIBE"])
    return {"account_id": account, "tables": seeded, "skipped": skipped,
            "column_tags_from_authoring_source": authored, "lf_tag_policy_grants": grants}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--endpoint", required=True)
    parser.add_argument("--config", default=str(ROOT / "tests" / "aws" / "domains.toml"))
    args = parser.parse_args()
    config = tomllib.loads(Path(args.config).read_text(encoding="utf-8"))
    summary = {"domains": {}, "drift": {"domain": DRIFT_DOMAIN, **DRIFT}}
    for d in config["domain"]:
        summary["domains"][d["name"]] = seed_domain(args.endpoint, config["region"], d)
    json.dump(summary, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
