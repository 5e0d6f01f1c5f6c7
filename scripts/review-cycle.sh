#!/usr/bin/env bash
# review-cycle.sh - the adversarial review cycle of IDEAS.md, driven through anvilfs's files alone.
#
#   scripts/review-cycle.sh [-m DIR] [MAX]        at most MAX rounds (default 3)
#
# Round N prompts each reviewer ("round N: review ..."), waits for them all, and ends if no answer
# has an "ISSUE:"; else it gives the developer the reviewers' answers, waits, and begins round N+1.
# Exit 0 when a round came back clean, 1 when MAX rounds ran out (the last fixes are unreviewed),
# 2 on an error. The files are read and written with `anvilfs read/write agent/...` (NAMESPACE
# as for anvilfs), or with -m DIR as plain files of a mount: cat DIR/r1/wait, echo ... >DIR/r1/in.
# Sessions not there yet are made: `new $BACKEND $CWD name=N role=reviewer` (developer for the
# developer; the role only if agent/roles lists it).
# Environment: BACKEND (default sim), DEV_BACKEND (default $BACKEND), CWD (default $PWD),
# REVIEWERS (default "r1 r2 r3 r4 r5"), DEVELOPER (default dev).
# Written in POSIX sh, so busybox sh runs it too (the QEMU guest of tests/vm has no bash).
set -u
usage() { echo "usage: review-cycle.sh [-m MOUNTDIR] [MAX]   (MAX: the most rounds, a number; default 3)" >&2; exit 2; }
mnt=
if [ "${1:-}" = -m ]; then [ $# -ge 2 ] || usage; mnt=$2; shift 2; fi
max=${1-3}
[ $# -le 1 ] || usage
case $max in '' | *[!0-9]*) usage ;; esac
reviewers=${REVIEWERS:-r1 r2 r3 r4 r5} developer=${DEVELOPER:-dev}
backend=${BACKEND:-sim}

if [ -n "$mnt" ]; then
  rd() { cat "$mnt/$1"; }
  wr() { cat >"$mnt/$1"; }
else
  rd() { anvilfs read "agent/$1"; }
  wr() { anvilfs write "agent/$1"; }
fi
say() { echo "review-cycle: $*" >&2; }
die() { say "$*"; exit 2; }

list=$(rd list) || die "cannot read agent/list: is anvilfs serve running, and NAMESPACE its own?"
roles=$(rd roles)
session() {  # session NAME ROLE BACKEND: make it unless it is there
  printf '%s\n' "$list" | grep "^$1 " >/dev/null && return
  role=; printf '%s\n' "$roles" | grep -x "$2" >/dev/null && role="role=$2"
  echo "new $3 ${CWD:-$PWD} name=$1 $role" | wr ctl || die "cannot make session $1 (see agent/errors)"
}

wait_answers() {  # wait_answers NAME...: each turn must end with an answer
  for s; do
    state=$(rd "$s/wait") || die "cannot read $s/wait"
    [ "$state" = await ] || die "$s is $state, not await: its log says why"
  done
}

for r in $reviewers; do session "$r" reviewer "$backend"; done
session "$developer" developer "${DEV_BACKEND:-$backend}"
n=1
while [ "$n" -le "$max" ]; do
  for r in $reviewers; do
    { echo "round $n: review the code in ${CWD:-$PWD} (the developer's last answer is in agent/$developer/out)"
      echo "Write one line ISSUE: WHAT per problem, or NO ISSUES."; } | wr "$r/in" || die "cannot prompt $r"
  done
  wait_answers $reviewers
  issues= fixes="round $n: fix what the reviewers found:"
  for r in $reviewers; do  # each answer read once: what is judged is what the developer gets
    out=$(rd "$r/out") || die "cannot read $r/out"
    case $out in *ISSUE:*) issues="$issues $r" ;; esac
    fixes=$(printf '%s\n%s/out:\n%s' "$fixes" "$r" "$out")
  done
  [ -n "$issues" ] || { say "round $n: no issues"; exit 0; }
  say "round $n: issues from$issues"
  printf '%s\n' "$fixes" | wr "$developer/in" || die "cannot prompt $developer"
  wait_answers "$developer"
  n=$((n + 1))
done
say "$max rounds, and still issues"
exit 1
