# shellcheck shell=sh
# poll.sh — sourced by the packaging checks: waiting for an answer.
#
#   weft_eventually URL STATUS TEXT TRIES PAUSE [EACH]
#       asks URL with the caller's `get` (which sets $code and $body) until
#       it answers STATUS with TEXT in its body: returns 0. After TRIES more
#       misses, PAUSE seconds apart, returns 1, $code and $body the last
#       answer's for the caller's message. EACH, a command, runs after every
#       miss (to fail at once when the server died).

weft_eventually() {
  i=0
  while :; do
    get "$1"
    if [ "$code" = "$2" ]; then
      case $body in *"$3"*) return 0 ;; esac
    fi
    [ -z "${6:-}" ] || $6
    [ "$i" -lt "$4" ] || return 1
    sleep "$5"
    i=$((i + 1))
  done
}
