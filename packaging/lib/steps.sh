# shellcheck shell=sh
# steps.sh — sourced by the packaging checks (check-debian.sh,
# check-systemd.sh, check-container.sh, check-cluster.sh): a stage's checks
# as named steps, with the PASS / FAIL / TODO lines they print.
# The caller sets $me (its name, for note lines).
#
#   step NAME      starts a step          pass         ends it, passed
#   fail MESSAGE   fails it and exits 1   todo MESSAGE  a target missed: reported, counted in $todos
#   note MESSAGE   a line of information  summary      prints every step's outcome

results=""
current=""
failed=""
todos=0
step() {
  current=$1
  echo "=== $current" >&2
}
pass() {
  echo "PASS: $current" >&2
  results="$results
  PASS  $current"
}
fail() {
  failed="$current: $*"
  echo "FAIL: $failed" >&2
  exit 1
}
note() { echo "$me: $*" >&2; }
# A target the shared machine's load can miss (a p99): reported and
# counted, not failed.
todo() {
  echo "TODO: $current: $*" >&2
  results="$results
  TODO  $current: $*"
  todos=$((todos + 1))
}
summary() { echo "$me:$results" >&2; }
