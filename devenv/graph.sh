#!/usr/bin/env bash
# Draws the resource graph of a stack's state (`pulumi stack graph`: dependency
# edges only, parents left out) into docs/<stack>-stack-graph.svg with graphviz.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
stack=${1:-dev}
eval "$("$here/env.sh")"
command -v dot >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq graphviz; } >/dev/null
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
pulumi stack graph -s "$stack" --ignore-parent-edges "$scratch/graph.dot" >"$scratch/log" 2>&1 || { cat "$scratch/log" >&2; exit 1; }
# Short labels: a resource's name, not its URN.
sed -E 's/label="urn:pulumi:[^"]*::([^":]+)"/label="\1"/' "$scratch/graph.dot" >"$scratch/short.dot"
dot -Grankdir=LR -Nshape=box -Nfontsize=10 -Tsvg "$scratch/short.dot" -o "$root/docs/$stack-stack-graph.svg"
echo "graph.sh: wrote docs/$stack-stack-graph.svg ($(grep -c -- '->' "$scratch/short.dot") dependency edges)"
