#!/usr/bin/env python3
"""Publish → follow measurements against a running S3 (moto or an S3-compatible store).

Run through scripts/follow-bench.sh (which documents the environment). Measures, for the
demo catalog: publish → both replicas serving the new id (p50 of RUNS runs at
--follow-interval INTERVAL), a fresh replica's time to ready and bytes/objects downloaded,
and a restart with the files present (bytes/objects). With BIG_INDEX (an index directory
holding a CURRENT, e.g. written by the scale bench's build phase) the same fresh/restart
figures for that snapshot. Writes OUT (JSON) and prints a summary.
"""

import json
import random
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.environ.get("GOVCAT_BIN") or sys.exit("GOVCAT_BIN is not set: the govcat binary to measure")
ENDPOINT = os.environ.get("MOTO_URL") or os.environ.get("AWS_ENDPOINT_URL") or "http://127.0.0.1:5000"
RUNS = int(os.environ.get("RUNS", "5"))
INTERVAL = int(os.environ.get("INTERVAL", "2"))
BIG_INDEX = os.environ.get("BIG_INDEX")
OUT = os.environ.get("OUT", os.path.join(REPO, "target/bench/follow.json"))
BUCKET = f"govcat-bench-{os.getpid()}"
DEADLINE = float(os.environ.get("DEADLINE_SECONDS", "600"))

ENV = dict(os.environ)
ENV.setdefault("AWS_ACCESS_KEY_ID", "AKIDBENCH")
ENV.setdefault("AWS_SECRET_ACCESS_KEY", "bench-secret")
ENV.setdefault("AWS_REGION", "eu-central-1")
ENV["AWS_ENDPOINT_URL"] = ENDPOINT
ENV["AWS_EC2_METADATA_DISABLED"] = "true"
ENV.setdefault("GOVCAT_LOG", "warn")


def http(method, url, body=None):
    req = urllib.request.Request(url, data=body, method=method)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()
    except OSError:
        return 0, b""


def create_bucket():
    # moto accepts unsigned requests; a real store needs the bucket created beforehand
    # (BUCKET=... then skips this).
    body = (
        b'<CreateBucketConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
        + f"<LocationConstraint>{ENV['AWS_REGION']}</LocationConstraint>".encode()
        + b"</CreateBucketConfiguration>"
    )
    status, text = http("PUT", f"{ENDPOINT}/{BUCKET}", body)
    if status not in (200, 409):
        sys.exit(f"creating bucket {BUCKET} at {ENDPOINT} answered {status}: {text[:300]!r}")


class Replica:
    def __init__(self, name, work, location, flags):
        self.index = os.path.join(work, name)
        self.started = time.monotonic()
        self.proc = subprocess.Popen(
            [BIN, *flags, "--index", self.index, "serve", "--listen", "127.0.0.1:0",
             "--follow", location, "--follow-interval", str(INTERVAL)],
            cwd=REPO, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        )
        line = self.proc.stdout.readline()
        prefix = "govcat: serving MCP at http://"
        if not line.startswith(prefix):
            sys.exit(f"replica {name} did not start: {line!r}")
        self.base = "http://" + line[len(prefix):].split("/")[0]
        # Drain stdout (audit lines) so the replica never blocks on it.
        import threading
        threading.Thread(target=lambda: [None for _ in self.proc.stdout], daemon=True).start()

    def readyz(self):
        status, body = http("GET", self.base + "/readyz")
        try:
            return status, json.loads(body)
        except ValueError:
            return status, {}

    def metrics(self):
        _, body = http("GET", self.base + "/metrics")
        out = {}
        for line in body.decode().splitlines():
            if line.startswith("govcat_follow_downloaded_"):
                k, v = line.split(" ")
                out[k] = float(v)
        return {"bytes": int(out.get("govcat_follow_downloaded_bytes_total", -1)),
                "objects": int(out.get("govcat_follow_downloaded_objects_total", -1))}

    def wait_serving(self, snapshot_id, since):
        while time.monotonic() - since < DEADLINE:
            status, r = self.readyz()
            if status == 200 and r.get("follow", {}).get("current_id") == snapshot_id:
                return time.monotonic() - since
            time.sleep(0.02)
        sys.exit(f"replica at {self.base} did not serve {snapshot_id} within {DEADLINE} s: {self.readyz()}")

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)


def govcat_index(flags, location):
    started = time.monotonic()
    out = subprocess.run([BIN, "--json", *flags, "index", "--publish", location],
                         cwd=REPO, env=ENV, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"govcat index --publish failed: {out.stdout}{out.stderr}")
    return json.loads(out.stdout), time.monotonic() - started


def change_catalog(catalog, run):
    path = os.path.join(catalog, "domains/hr/tables/absence/get-table.json")
    with open(path) as f:
        table = json.load(f)
    for c in table["Table"]["StorageDescriptor"]["Columns"]:
        if c["Name"] == "absence_id":
            c["Comment"] = f"Workday absence request id (bench run {run})."
    with open(path, "w") as f:
        json.dump(table, f)


def dir_bytes(path):
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)


def fresh_and_restart(work, name, location, flags, snapshot_id):
    fresh = Replica(name, work, location, flags)
    ready_s = fresh.wait_serving(snapshot_id, fresh.started)
    fresh_dl = fresh.metrics()
    fresh.stop()
    restarted = Replica(name, work, location, flags)
    restart_s = restarted.wait_serving(snapshot_id, restarted.started)
    restart_dl = restarted.metrics()
    restarted.stop()
    return {
        "fresh_ready_seconds": round(ready_s, 3),
        "fresh_downloaded": fresh_dl,
        "restart_ready_seconds": round(restart_s, 3),
        "restart_downloaded": restart_dl,
    }


def upload_big(index_dir, prefix):
    """Uploads an existing snapshot (e.g. the scale bench's) with boto3, CURRENT last."""
    import boto3  # in the project's .venv (moto depends on it)
    s3 = boto3.client("s3", endpoint_url=ENDPOINT, region_name=ENV["AWS_REGION"],
                      aws_access_key_id=ENV["AWS_ACCESS_KEY_ID"],
                      aws_secret_access_key=ENV["AWS_SECRET_ACCESS_KEY"])
    with open(os.path.join(index_dir, "CURRENT")) as f:
        sid = f.read().strip()
    snap = os.path.join(index_dir, "snapshots", sid)
    for d, _, files in os.walk(snap):
        for name in files:
            path = os.path.join(d, name)
            rel = os.path.relpath(path, snap)
            s3.upload_file(path, BUCKET, f"{prefix}/snapshots/{sid}/{rel}")
    s3.put_object(Bucket=BUCKET, Key=f"{prefix}/CURRENT", Body=(sid + "\n").encode())
    return sid, dir_bytes(snap)


def main():
    create_bucket()
    work = tempfile.mkdtemp(prefix="govcat-follow-bench-")
    report = {"binary": BIN, "endpoint": ENDPOINT, "interval_seconds": INTERVAL, "runs": RUNS}
    try:
        catalog = os.path.join(work, "catalog")
        shutil.copytree(os.path.join(REPO, "fixtures/catalog"), catalog)
        for f in ["lf-tags.json", "glossary-de-en.tsv", "abbreviations.tsv"]:
            shutil.copy(os.path.join(REPO, "ontology", f), os.path.join(work, f))
        indexer = os.path.join(work, "indexer")
        with open(os.path.join(REPO, "index/CURRENT")) as f:
            base = f.read().strip()
        shutil.copytree(os.path.join(REPO, "index/snapshots", base),
                        os.path.join(indexer, "snapshots", base))
        with open(os.path.join(indexer, "CURRENT"), "w") as f:
            f.write(base + "\n")
        flags = ["--catalog", catalog, "--ontology", os.path.join(work, "lf-tags.json")]
        location = f"s3://{BUCKET}/demo"
        manifest, _ = govcat_index([*flags, "--index", indexer], location)
        first = manifest["id"]
        report["demo_snapshot_bytes"] = manifest["published"]["bytes"]
        report["demo"] = fresh_and_restart(work, "fresh", location, flags, first)

        a = Replica("a", work, location, flags)
        b = Replica("b", work, location, flags)
        a.wait_serving(first, a.started)
        b.wait_serving(first, b.started)
        latencies, publish_s = [], []
        for run in range(RUNS):
            # A random phase against the replicas' polls, so runs do not lock onto one.
            time.sleep(random.uniform(0, INTERVAL))
            change_catalog(catalog, run)
            manifest, took = govcat_index([*flags, "--index", indexer], location)
            published = time.monotonic()
            publish_s.append(round(took, 3))
            sid = manifest["id"]
            la = a.wait_serving(sid, published)
            lb = b.wait_serving(sid, published)
            latencies.append(round(max(la, lb), 3))
            print(f"run {run + 1}: published {sid} in {took:.2f} s; both replicas serving it "
                  f"{max(la, lb):.2f} s after CURRENT was written", flush=True)
        a.stop()
        b.stop()
        report["publish_to_both_serving_seconds"] = latencies
        report["publish_to_both_serving_p50_seconds"] = statistics.median(latencies)
        report["publish_seconds"] = publish_s

        if BIG_INDEX:
            sid, size = upload_big(BIG_INDEX, "big")
            report["big_snapshot"] = {"id": sid, "bytes": size}
            # A snapshot without a recorded source (the scale bench's) is accepted for the
            # default catalog and ontology only: the replica runs without --catalog/--ontology.
            report["big"] = fresh_and_restart(work, "big", f"s3://{BUCKET}/big", [], sid)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as f:
        json.dump(report, f, indent=2)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
