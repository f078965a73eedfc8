#!/bin/bash
# Container health check: GET /readyz on the port of the running `govcat serve --listen`,
# over loopback, with bash's /dev/tcp (the image has no curl). Exit 0 only on HTTP 200.
# The port is read from the serve process's command line (any --listen ADDR:PORT or
# --listen=ADDR:PORT), so the check follows whatever port the task definition sets.
set -u
port=""
for cmdline in /proc/[0-9]*/cmdline; do
    mapfile -d '' -t argv < "$cmdline" 2>/dev/null || continue
    [ "${#argv[@]}" -gt 0 ] && [ "${argv[0]##*/}" = govcat ] || continue
    for i in "${!argv[@]}"; do
        case "${argv[$i]}" in
            --listen) port="${argv[$((i + 1))]##*:}" ;;
            --listen=*) port="${argv[$i]##*:}" ;;
        esac
    done
    [ -n "$port" ] && break
done
port="${port:-8080}"
exec 3<>"/dev/tcp/127.0.0.1/$port" || exit 1
printf 'GET /readyz HTTP/1.1\r\nHost: 127.0.0.1:%s\r\nConnection: close\r\n\r\n' "$port" >&3
IFS= read -r -t 4 status <&3 || exit 1
case "$status" in
    "HTTP/1.1 200"*|"HTTP/1.0 200"*) exit 0 ;;
    *) echo "readyz: ${status%$'\r'}" >&2; exit 1 ;;
esac
