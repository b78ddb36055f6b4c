#!/bin/sh
# tests/static_tls.sh WEFT — the server's static thread-local storage stays
# small. glibc zeroes a thread's whole static TLS block when it creates the
# thread, so every byte here is resident once per thread: a 160 KiB
# _Thread_local table once cost 33 MiB across a 200-thread pool. Per-loop
# state goes in a weft_loop hook instead (server/http/abuse.c).
set -eu
WEFT=$1
LIMIT=${STATIC_TLS_LIMIT:-4096}
READELF=${READELF:-readelf}
# Program header: TLS Offset VirtAddr PhysAddr FileSiz MemSiz Flg Align
size=$("$READELF" -lW "$WEFT" | awk '$1 == "TLS" { print $6 }')
[ -n "$size" ] || { echo "static_tls.sh: $WEFT has no TLS segment (fine)"; exit 0; }
bytes=$(printf '%d' "$size")
if [ "$bytes" -gt "$LIMIT" ]; then
    echo "static_tls.sh: $WEFT has $bytes bytes of static TLS (limit $LIMIT): each thread makes all of it resident" >&2
    echo "the largest thread-local symbols:" >&2
    "$READELF" -sW "$WEFT" | awk '$4 == "TLS" { print $3, $8 }' | sort -rg | head -5 >&2
    exit 1
fi
echo "static_tls.sh: $bytes bytes of static TLS (limit $LIMIT)"
