#!/usr/bin/env bash
# Builds the container image (deploy/Dockerfile) and runs it as the ECS stack does
# (deploy/cloudformation/govcat.yaml): the indexer task's command publishes the demo snapshot,
# the replica task's command follows and serves it, as uid 10001 with a read-only root
# filesystem and a volume for /var/lib/govcat; then real HTTP on loopback:
#   - POST /v1/tools/find_precedents {"description":"contains an EU IBAN"} with a bearer token
#     (exact fields of the answer; the snapshot id is the one the indexer published),
#   - the same without a token is 401 (the --auth jwt flags are in effect),
#   - GET /readyz with a private-IP Host (what an ALB health check sends) is 200, and /mcp with
#     that Host is still refused (DNS-rebinding protection),
#   - docker's HEALTHCHECK (deploy/image/healthcheck.sh) reports healthy,
#   - the container runs as 10001 and cannot write its root filesystem.
#
# The commands come from the task definitions (deploy/ci/task-command.py) with exactly these
# substitutions, because this machine has no AWS and containers may listen on loopback only:
#   --source aws            -> --source dir (the demo catalog baked into the image)
#   --listen 0.0.0.0:8080   -> --listen 127.0.0.1:<free port>
#   s3://BUCKET/PREFIX      -> /srv/govcat-publish (a docker volume both containers mount:
#                              govcat index --publish DIR / serve --follow DIR)
#   parameters              -> a local issuer: a JWKS served on loopback (deploy/ci/test-token.py)
#   Secrets (the domain map) are not set.
#
# Bases: $GOVCAT_BUILDER_IMAGE and $GOVCAT_RUNTIME_IMAGE if set (e.g. rust:1.94-slim-bookworm and
# debian:bookworm-slim where a registry is reachable), else deploy/ci/build-local-bases.sh
# imports them from debootstrap and the host's rustup toolchain. Starts dockerd (and stops it
# again) when no daemon answers; removes its containers and volumes on any exit.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
log() { printf 'test-image.sh: %s\n' "$*" >&2; }
die() { log "FAIL: $*"; exit 1; }
t0=$(date +%s)
since() { echo "$(( $(date +%s) - $1 )) s"; }

# A clean machine of this kind has a docker client only: the daemon (docker.io) and debootstrap
# come from Debian's packages.
missing=()
command -v dockerd >/dev/null || missing+=(docker.io)
command -v debootstrap >/dev/null || [ -n "${GOVCAT_BUILDER_IMAGE:-}" ] || missing+=(debootstrap)
if [ "${#missing[@]}" -gt 0 ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    log "installing ${missing[*]} (apt-get)"
    apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null \
        || die "apt-get install ${missing[*]} failed"
fi
command -v docker >/dev/null || die "no docker client; install docker.io (apt-get install -y docker.io debootstrap)"
for c in curl openssl python3; do command -v "$c" >/dev/null || die "$c is required"; done
scripts/setup-deploy-checks.sh >/dev/null   # PyYAML for deploy/ci/task-command.py
venv_python="$repo/.venv-deploy/bin/python"

export DOCKER_BUILDKIT=0   # the classic builder: docker.io 20.10 here has no buildx
tag="govcat:test-$(git rev-parse --short HEAD 2>/dev/null || echo local)"
run_id="govcat-test-$$"
work=$(mktemp -d "${TMPDIR:-/tmp}/govcat-test-image.XXXXXX")
dockerd_pid=""
jwks_pid=""
extra_ca_copied=()

cleanup() {
    local rc=$?
    set +e
    if [ "$rc" -ne 0 ] && docker inspect "$run_id-replica" >/dev/null 2>&1; then
        log "replica log (last 40 lines):"
        docker logs --tail 40 "$run_id-replica" >&2 2>&1
    fi
    docker rm -f "$run_id-replica" >/dev/null 2>&1
    docker volume rm -f "$run_id-replica" "$run_id-publish" >/dev/null 2>&1
    [ -n "$jwks_pid" ] && kill "$jwks_pid" 2>/dev/null
    for f in "${extra_ca_copied[@]}"; do rm -f "$f"; done
    if [ -n "$dockerd_pid" ]; then
        log "stopping the docker daemon this script started (pid $dockerd_pid)"
        kill "$dockerd_pid" 2>/dev/null
        for _ in $(seq 1 60); do kill -0 "$dockerd_pid" 2>/dev/null || break; sleep 0.5; done
    fi
    rm -rf "$work"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---------------------------------------------------------------- docker daemon
if ! docker info >/dev/null 2>&1; then
    command -v dockerd >/dev/null || die "no docker daemon answers and dockerd is not installed (apt-get install -y docker.io)"
    [ "$(id -u)" = 0 ] || die "no docker daemon answers; starting one needs root"
    log "starting dockerd (no bridge, no iptables: containers use host networking)"
    dockerd --bridge=none --iptables=false >"$work/dockerd.log" 2>&1 &
    dockerd_pid=$!
    for _ in $(seq 1 120); do docker info >/dev/null 2>&1 && break; kill -0 "$dockerd_pid" 2>/dev/null || break; sleep 0.5; done
    docker info >/dev/null 2>&1 || { tail -20 "$work/dockerd.log" >&2; die "dockerd did not start"; }
fi

# ---------------------------------------------------------------- bases
step_t=$(date +%s)
if [ -n "${GOVCAT_BUILDER_IMAGE:-}" ] && [ -n "${GOVCAT_RUNTIME_IMAGE:-}" ]; then
    builder_image=$GOVCAT_BUILDER_IMAGE
    runtime_image=$GOVCAT_RUNTIME_IMAGE
else
    command -v debootstrap >/dev/null || die "debootstrap is required to make the local bases (apt-get install -y debootstrap), or set GOVCAT_BUILDER_IMAGE and GOVCAT_RUNTIME_IMAGE"
    bases=$(deploy/ci/build-local-bases.sh)
    builder_image=$(sed -n 's/^BUILDER_IMAGE=//p' <<<"$bases")
    runtime_image=$(sed -n 's/^RUNTIME_IMAGE=//p' <<<"$bases")
fi
log "bases: builder $builder_image, runtime $runtime_image ($(since "$step_t"))"

# ---------------------------------------------------------------- image
step_t=$(date +%s)
# A TLS-inspecting proxy's CAs that this host trusts are trusted by the build stage too
# (deploy/image/extra-ca/README.md); removed again on exit.
shopt -s nullglob
for crt in /usr/local/share/ca-certificates/*.crt; do
    dest="deploy/image/extra-ca/$(basename "$crt")"
    if [ ! -e "$dest" ]; then cp "$crt" "$dest"; extra_ca_copied+=("$repo/$dest"); fi
done
shopt -u nullglob
docker build --network host -f deploy/Dockerfile \
    --build-arg BUILDER_IMAGE="$builder_image" --build-arg RUNTIME_IMAGE="$runtime_image" \
    -t "$tag" . >"$work/build.log" 2>&1 || { tail -40 "$work/build.log" >&2; die "docker build failed"; }
for f in "${extra_ca_copied[@]}"; do rm -f "$f"; done
extra_ca_copied=()
size_mb=$(( $(docker image inspect -f '{{.Size}}' "$tag") / 1048576 ))
log "image $tag built: ${size_mb} MB ($(since "$step_t"))"
[ "$(docker image inspect -f '{{.Config.User}}' "$tag")" = "10001:10001" ] || die "the image's USER is not 10001:10001"

# ---------------------------------------------------------------- the task definitions' commands
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
port=$(free_port)
jwks_port=$(free_port)
issuer="https://issuer.test-image.example"
host_name="catalog.test-image.example"
audience="https://$host_name/mcp"
publish_dir=/srv/govcat-publish

# task_command TASK: fills the arrays env_args and cmd_args from the template, substituted.
task_command() {
    env_args=()
    cmd_args=()
    local kind value prev=""
    while IFS= read -r line; do
        kind=${line%% *}
        value=${line#* }
        case "$kind" in
            env) env_args+=(-e "$value") ;;
            secret) ;;
            arg)
                case "$prev:$value" in
                    --source:aws) value=dir ;;
                    --listen:0.0.0.0:8080) value="127.0.0.1:$port" ;;
                    --listen:*) die "the task definition listens on $value; this test expects 0.0.0.0:8080" ;;
                esac
                case "$value" in s3://*) value=$publish_dir ;; esac
                cmd_args+=("$value")
                prev=$value ;;
        esac
    done < <("$venv_python" deploy/ci/task-command.py deploy/cloudformation/govcat.yaml "$1" govcat \
        "JwtIssuer=$issuer" "JwksUrl=http://127.0.0.1:$jwks_port/jwks.json" "PublicHostName=$host_name" \
        "SnapshotBucket=test-bucket" "AWS::StackName=govcat-test" "AWS::Region=eu-central-1")
    [ "${#cmd_args[@]}" -gt 0 ] || die "no command for $1 in deploy/cloudformation/govcat.yaml"
}

# As ECS runs them: the task definition's user, a read-only root filesystem, /var/lib/govcat
# a volume (ECS: task storage or EFS), /tmp a tmpfs, host networking on loopback.
run_flags=(--network host --user 10001:10001 --read-only --tmpfs /tmp:rw,size=64m)

for v in replica publish; do docker volume create "$run_id-$v" >/dev/null; done
# The publish volume stands in for the bucket: owned by the image's user (one root step).
docker run --rm --network none --user 0 -v "$run_id-publish:$publish_dir" --entrypoint /bin/chown "$tag" 10001:10001 "$publish_dir"

# ---------------------------------------------------------------- indexer
step_t=$(date +%s)
task_command IndexerTaskDefinition
log "indexer: govcat ${cmd_args[*]}"
# Its /var/lib/govcat starts empty, as the EFS access point of a first run does.
docker run --rm "${run_flags[@]}" "${env_args[@]}" \
    --tmpfs /var/lib/govcat:rw,uid=10001,gid=10001,mode=0750,size=512m -v "$run_id-publish:$publish_dir" \
    "$tag" "${cmd_args[@]}" >"$work/indexer.log" 2>&1 || { tail -30 "$work/indexer.log" >&2; die "the indexer task failed"; }
published_id=$(docker run --rm --network none -v "$run_id-publish:$publish_dir:ro" --entrypoint /bin/cat "$tag" "$publish_dir/CURRENT" | tr -d '[:space:]')
[ -n "$published_id" ] || die "the indexer wrote no CURRENT"
log "indexer published snapshot $published_id ($(since "$step_t"))"

# ---------------------------------------------------------------- replica
step_t=$(date +%s)
mkdir -p "$work/jwks"
python3 deploy/ci/test-token.py init "$work/jwks"
python3 -m http.server "$jwks_port" --bind 127.0.0.1 --directory "$work/jwks" >"$work/jwks.log" 2>&1 &
jwks_pid=$!
task_command ReplicaTaskDefinition
log "replica: govcat ${cmd_args[*]}"
docker run -d --name "$run_id-replica" "${run_flags[@]}" "${env_args[@]}" \
    --health-interval 2s --health-start-period 120s \
    -v "$run_id-replica:/var/lib/govcat" -v "$run_id-publish:$publish_dir:ro" \
    "$tag" "${cmd_args[@]}" >/dev/null
base="http://127.0.0.1:$port"
ready=""
for _ in $(seq 1 300); do
    if curl -fsS -o /dev/null "$base/readyz" 2>/dev/null; then ready=1; break; fi
    [ "$(docker inspect -f '{{.State.Running}}' "$run_id-replica")" = true ] || die "the replica exited"
    sleep 0.5
done
[ -n "$ready" ] || die "the replica was not ready on $base within 150 s"
log "replica ready on $base ($(since "$step_t"))"

# ---------------------------------------------------------------- checks
domains=$(ls fixtures/catalog/domains)
scopes=()
for d in $domains; do scopes+=("catalog:$d:read"); done
token=$(python3 deploy/ci/test-token.py token "$work/jwks" "$issuer" "$audience" "${scopes[@]}")

status=$(curl -sS -o "$work/answer.json" -w '%{http_code}' -X POST "$base/v1/tools/find_precedents" \
    -H "authorization: Bearer $token" -H 'content-type: application/json' \
    -d '{"description":"contains an EU IBAN"}')
[ "$status" = 200 ] || { cat "$work/answer.json" >&2; die "find_precedents answered $status, expected 200"; }
python3 - "$work/answer.json" "$published_id" $domains <<'PY' || die "find_precedents answered other fields than expected (above)"
import json, sys
answer = json.load(open(sys.argv[1]))
published, domains = sys.argv[2], sorted(sys.argv[3:])
first = answer["entries"][0]
got = {
    "snapshot.id": answer["snapshot"]["id"],
    "request.snapshot_id": answer["request"]["snapshot_id"],
    "snapshot.source_freshness.kind": answer["snapshot"]["source_freshness"]["kind"],
    "snapshot.source_freshness.location": answer["snapshot"]["source_freshness"]["location"],
    "request.description": answer["request"]["description"],
    "request.domains": answer["request"]["domains"],
    "request.scope_source": answer["request"]["scope_source"],
    "request.limit": answer["request"]["limit"],
    "sort_key": answer["sort_key"],
    "len(entries)": len(answer["entries"]),
    "ttlMs": answer["ttlMs"],
    "cacheScope": answer["cacheScope"],
    "entries[0].id": first["id"],
    "entries[0].kind": first["kind"],
    "entries[0].(domain, table, column, type)": [first["domain"], first["table"], first["column"], first["type"]],
    "entries[0].match_type": first["match_type"],
    "entries[0].lf_tags": first["lf_tags"],
}
want = {
    # the replica serves exactly what the indexer published, built from the image's catalog
    "snapshot.id": published,
    "request.snapshot_id": published,
    "snapshot.source_freshness.kind": "dir",
    "snapshot.source_freshness.location": "/opt/govcat/demo-catalog",
    "request.description": "contains an EU IBAN",
    # the token's scopes: every domain of the demo catalog
    "request.domains": domains,
    "request.scope_source": "authorized_all",
    "request.limit": 10,
    "sort_key": "score desc, id asc",
    "len(entries)": 10,
    # --follow: the floor ttl; a token caller: private
    "ttlMs": 30000,
    "cacheScope": "private",
    # the flagship precedent and its tags as the demo catalog holds them
    "entries[0].id": "column:policy.customer.iban",
    "entries[0].kind": "column",
    "entries[0].(domain, table, column, type)": ["policy", "customer", "iban", "string"],
    "entries[0].match_type": "both",
    "entries[0].lf_tags": {
        "lawful_basis": {"state": "present", "value": "contract", "assigned_at": "table"},
        "residency": {"state": "present", "value": "eu", "assigned_at": "database"},
        "retention": {"state": "present", "value": "10y", "assigned_at": "table"},
        "sensitivity": {"state": "present", "value": "high", "assigned_at": "column"},
        "subject_type": {"state": "present", "value": "customer", "assigned_at": "table"},
    },
}
bad = [k for k in want if got[k] != want[k]]
for k in bad:
    print(f"  {k}: got {json.dumps(got[k])}, expected {json.dumps(want[k])}", file=sys.stderr)
sys.exit(1 if bad else 0)
PY
log "find_precedents: the expected answer, from snapshot $published_id"

status=$(curl -sS -o "$work/noauth.json" -w '%{http_code}' -X POST "$base/v1/tools/find_precedents" \
    -H 'content-type: application/json' -d '{"description":"contains an EU IBAN"}')
[ "$status" = 401 ] || die "find_precedents without a token answered $status, expected 401"

status=$(curl -sS -o /dev/null -w '%{http_code}' -H 'Host: 10.0.1.23:8443' -X POST "$base/mcp" \
    -H "authorization: Bearer $token" -H 'content-type: application/json' \
    -H 'accept: application/json, text/event-stream' \
    -d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"test-image","version":"0"}}}')
[ "$status" = 403 ] || die "/mcp with Host 10.0.1.23:8443 answered $status, expected 403 (DNS-rebinding protection)"

health=""
for _ in $(seq 1 30); do
    health=$(docker inspect -f '{{.State.Health.Status}}' "$run_id-replica")
    [ "$health" = healthy ] && break
    sleep 1
done
[ "$health" = healthy ] || die "docker HEALTHCHECK says $health, expected healthy"

[ "$(docker exec "$run_id-replica" id -u)" = 10001 ] || die "the replica does not run as uid 10001"
if docker exec "$run_id-replica" touch /opt/govcat/probe 2>/dev/null; then die "the root filesystem is writable"; fi

# Under --auth jwt /readyz shows its details (follow, snapshot ids) to a token holder only.
curl -fsS -H "authorization: Bearer $token" "$base/readyz" >"$work/readyz-local.json" || die "/readyz on loopback failed"
python3 - "$work/readyz-local.json" "$published_id" "$publish_dir" <<'PY' || die "/readyz's follow object is not the expected one (above)"
import json, sys
follow = json.load(open(sys.argv[1]))["follow"]
got = {k: follow.get(k) for k in ("source", "current_id", "remote_id", "lag_seconds", "last_error", "errors")}
want = {"source": sys.argv[3], "current_id": sys.argv[2], "remote_id": sys.argv[2],
        "lag_seconds": 0, "last_error": None, "errors": {}}
if got != want:
    sys.exit(f"  follow: got {json.dumps(got)}, expected {json.dumps(want)}")
PY
log "401 without a token, /mcp refused for a foreign Host, HEALTHCHECK healthy, uid 10001, read-only root, /readyz follow in step: OK"

# Last, so that every other check has run: an ALB health check sends the task's private IP
# as Host (issue 45, item 1: the probes answer whatever the Host).
status=$(curl -sS -o "$work/readyz.json" -w '%{http_code}' -H 'Host: 10.0.1.23:8443' "$base/readyz")
[ "$status" = 200 ] || { head -c 600 "$work/readyz.json" >&2; echo >&2; die "/readyz with Host 10.0.1.23:8443 (an ALB health check) answered $status, expected 200"; }
log "PASS: image $tag (${size_mb} MB), indexer + replica as in deploy/cloudformation/govcat.yaml; $(since "$t0") in all"
