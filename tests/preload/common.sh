# Sourced by the preload test scripts: removes every ZMPI_ variable of the
# caller's environment (a test sets its own) and makes $dir, a temporary
# directory removed when the script exits.
for v in $(env | sed -n 's/^\(ZMPI_[A-Za-z0-9_]*\)=.*/\1/p'); do
    unset "$v"
done
dir=$(mktemp -d "${TMPDIR:-/tmp}/zmpi-test.XXXXXX")
trap 'rm -rf "$dir"' EXIT INT TERM
