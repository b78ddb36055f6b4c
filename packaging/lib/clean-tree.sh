# shellcheck shell=sh
# clean-tree.sh — sourced by the packaging checks: the source tree as a clean
# clone has it, copied where a build may scribble.
#
#   weft_clean_tree SRC DEST
#       copies into DEST (made if missing) the files git tracks, with the
#       working tree's content (uncommitted edits are tested too), and the
#       untracked files git does not ignore: never a build tree, never .git.
#       A tracked file deleted in the working tree is left out. SRC outside
#       git (an unpacked tarball): everything but build*/, .weft/, obj-*/.
#   weft_clean_tree_git DEST
#       makes DEST a git repository of its own with one commit, for what
#       lists files with git (the doc tests).
#
# Both print why on stderr and return non-zero on failure; the caller says
# what failed.

weft_clean_tree() {
  mkdir -p "$2" || return 1
  if git -C "$1" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    # --ignore-failed-read: a tracked file deleted in the working tree.
    (cd "$1" && git ls-files -z --cached --others --exclude-standard |
      tar --null --ignore-failed-read -T - -cf - 2>/dev/null) | tar -xf - -C "$2"
  else
    (cd "$1" && tar --exclude='./build*' --exclude=./.weft --exclude='./obj-*' --exclude=./.git -cf - .) |
      tar -xf - -C "$2"
  fi
}

weft_clean_tree_git() {
  git -C "$1" init -q &&
    git -C "$1" add -A &&
    git -C "$1" -c user.name=weft-ci -c user.email=weft-ci@localhost commit -qm "the tree under test"
}
