# Sourced by the preload test scripts: removes every ZMPI_ variable of the
# caller's environment (a test sets its own) but ZMPI_NODE_RANKS=1 - every
# rank a node of its own, as on a cluster of one rank per node: the ranks of
# this machine share one node, where zmpi sends plain (a test of that rule
# sets ZMPI_NODE_RANKS=auto) - and makes $dir, a temporary directory removed
# when the script exits.
for v in $(env | sed -n 's/^\(ZMPI_[A-Za-z0-9_]*\)=.*/\1/p'); do
    unset "$v"
done
export ZMPI_NODE_RANKS=1
# and every call that can be compressed is (the measured decision would follow this machine's noise)
export ZMPI_DECISION=always
dir=$(mktemp -d "${TMPDIR:-/tmp}/zmpi-test.XXXXXX")
trap 'rm -rf "$dir"' EXIT INT TERM
