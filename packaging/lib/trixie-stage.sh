# shellcheck shell=sh
# trixie-stage.sh — sourced by the Debian 13 stages (check-trixie.sh,
# build-trixie-debs.sh): what they share, so that each script says only
# what it runs inside.
#
#   weft_trixie_stage NAME SECONDS
#       the frame: defines say (a line on stderr, prefixed NAME:), fail (that,
#       plus "NAME: FAILED: …" on stdout, exit 1), elapsed and left (seconds
#       since now, and left of SECONDS); checks for root and the tools; sets
#       the EXIT trap that removes $scratch and a half-made root, whatever
#       happens (INT and TERM exit 130 through it).
#   weft_trixie_root SRC CACHE
#       makes sure $CACHE/trixie-KEY holds a Debian 13 root and sets
#       weft_trixie_rootfs to it. The root is `mmdebstrap --variant=important
#       --include=LIST trixie`, LIST being `SRC/packaging/install-deps.sh
#       --list suite trixie` (the packages are written once, there); KEY is a
#       hash of that command, so a changed list makes a new root (1-4 minutes
#       from the Debian mirror, within what is left) and removes the others.
#       It is built beside its place and renamed into it: an interrupted build
#       never leaves half a root. Descriptor 8 then holds a shared lock on the
#       cache, so that no other run removes the root while this one uses it.
#   weft_trixie_nspawn SECONDS NSPAWN-OPTION... COMMAND...
#       runs COMMAND in that root, not booted, for at most SECONDS:
#       `--as-pid2` (orphaned processes are reaped), `--volatile=overlay`
#       (changes go to a tmpfs, the cached root stays as it is),
#       `--private-network` (loopback only), $scratch bound at /ci, and this
#       shell's descriptor limits (the kernel's default 1024 otherwise).
#   weft_trixie_verdict STATUS LOG
#       after weft_trixie_nspawn: prints what the command wrote (without
#       nspawn's noise and the "RESULT …" lines), sets result to the last
#       "RESULT …" line's text (the stage's own verdict) and fails on a
#       timeout or a non-zero STATUS, naming it.

weft_trixie_stage() {
  weft_trixie_name=$1
  weft_trixie_limit=$2
  weft_trixie_start=$(date +%s)
  scratch=""
  weft_trixie_building=""
  trap weft_trixie_cleanup EXIT
  trap 'exit 130' INT TERM
  [ "$(id -u)" -eq 0 ] || fail "needs root (mmdebstrap and systemd-nspawn make and run the Debian 13 root)"
  for _t in mmdebstrap systemd-nspawn git flock sha256sum timeout; do
    command -v "$_t" >/dev/null 2>&1 || fail "$_t is missing: packaging/install-deps.sh test installs it"
  done
}
say() { echo "$weft_trixie_name: $*" >&2; }
fail() {
  say "$*"
  echo "$weft_trixie_name: FAILED: $*"
  exit 1
}
elapsed() { echo $(($(date +%s) - weft_trixie_start)); }
left() { echo $((weft_trixie_limit - $(elapsed))); }
weft_trixie_cleanup() {
  [ -z "$weft_trixie_building" ] || rm -rf "$weft_trixie_building"
  [ -z "$scratch" ] || rm -rf "$scratch"
}

weft_trixie_root() {
  _pkgs=$("$1/packaging/install-deps.sh" --list suite trixie) || fail "install-deps.sh --list suite trixie failed"
  _mm="mmdebstrap --variant=important --include=$(echo "$_pkgs" | tr ' ' ',') trixie"
  _key=$(printf '%s\n' "$_mm" | sha256sum | cut -c1-16)
  weft_trixie_rootfs=$2/trixie-$_key
  mkdir -p "$2" || fail "cannot make the cache directory $2"
  # Exclusive while a root is made (and older ones removed), shared while
  # one is used: a run never removes the root another run works in.
  exec 8>"$2/.trixie.lock"
  flock 8
  if [ ! -f "$weft_trixie_rootfs/.weft-ready" ]; then
    say "making the Debian 13 root $weft_trixie_rootfs (mmdebstrap, 1-4 minutes)"
    weft_trixie_building=$weft_trixie_rootfs.new.$$
    # shellcheck disable=SC2086 # the command, split into its words
    if ! timeout "$(left)" $_mm "$weft_trixie_building" >"$2/trixie-$_key.log" 2>&1; then
      tail -n 20 "$2/trixie-$_key.log" >&2
      fail "mmdebstrap could not make the Debian 13 root (log: $2/trixie-$_key.log)"
    fi
    printf '%s\n' "$_mm" >"$weft_trixie_building/.weft-ready"
    rm -rf "$weft_trixie_rootfs"
    mv "$weft_trixie_building" "$weft_trixie_rootfs"
    weft_trixie_building=""
    for _old in "$2"/trixie-*; do
      case $_old in "$weft_trixie_rootfs" | "$weft_trixie_rootfs.log") continue ;; esac
      rm -rf "$_old"
    done
  else
    say "using the cached Debian 13 root $weft_trixie_rootfs"
  fi
  flock -s 8
}

weft_trixie_nspawn() {
  _seconds=$1
  shift
  # shellcheck disable=SC3045 # dash, Debian's sh, has ulimit -S and -H
  timeout --kill-after=30 "$_seconds" systemd-nspawn -q -D "$weft_trixie_rootfs" --register=no --keep-unit \
    --as-pid2 --private-network --volatile=overlay --bind="$scratch:/ci" \
    --rlimit=RLIMIT_NOFILE="$(ulimit -Sn):$(ulimit -Hn)" "$@"
}

# shellcheck disable=SC2034 # result is the caller's
weft_trixie_verdict() {
  # nspawn says this about the overlay root at every exit; it means nothing.
  grep -v 'Attempted to remove disk file system' "$2" | grep -v '^RESULT ' >&2 || true
  result=$(sed -n 's/^RESULT //p' "$2" | tail -1)
  if [ "$1" -eq 124 ] || [ "$1" -eq 137 ]; then
    fail "Debian 13: stopped after the $weft_trixie_limit s limit (WEFT_TRIXIE_TIMEOUT) ${result:+($result)}"
  fi
  [ "$1" -eq 0 ] || fail "Debian 13: ${result:-systemd-nspawn exited $1} in $(elapsed) s"
}
