#!/bin/sh
# Runs the dev-team example in a throwaway git repository: the planner puts
# three tasks on the board, alice and bob each take theirs and commit it in
# a git worktree of their own, and the planner puts both branches in the
# merge queue, which lands them on main once test.sh passes on the merge. Needs git and agent-worker (on PATH, or AGENT_WORKER=path/to/it);
# no API key: every agent runs on the scripted mock backend.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
aw=${AGENT_WORKER:-agent-worker}
repo=$(mktemp -d "${TMPDIR:-/tmp}/aw-dev-team.XXXXXX")

git -C "$repo" init -q -b main
# The merge queue commits its merges as this identity.
git -C "$repo" config user.name "dev-team example"
git -C "$repo" config user.email dev-team@example.invalid
cp "$here/team.yaml" "$repo/team.yaml"
printf '# greeter\n\nScripts that greet.\n' >"$repo/README.md"
printf '.workflow/\n' >"$repo/.gitignore"
# The project's tests, which the merge queue runs (checks: in team.yaml):
# every script runs and prints something.
cat >"$repo/test.sh" <<'EOF'
#!/bin/sh
for f in *.sh; do
  [ "$f" = test.sh ] && continue
  out=$(sh "$f") || { echo "$f failed"; exit 1; }
  [ -n "$out" ] || { echo "$f printed nothing"; exit 1; }
  echo "$f: $out"
done
EOF
git -C "$repo" add .
git -C "$repo" commit -q -m "start the greeter"
echo "a throwaway repository: $repo"
echo

"$aw" run "$repo/team.yaml"
echo
"$aw" tasks @dev-team
echo
echo "the merge queue, every entry:"
"$aw" worktree queue @dev-team --all
echo
echo "alice's and bob's worktrees are gone with the team: their work is merged. Had it not been, they would be kept:"
"$aw" worktree list @dev-team
echo
git -C "$repo" log --graph --format="%h %s (%an)" main
echo
echo "main now has both scripts:"
ls "$repo"
