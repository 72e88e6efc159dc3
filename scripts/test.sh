#!/usr/bin/env bash
# The test command (README, .ci/run): installs what the tests need from package registries,
# builds the tests, runs every one of them, and ends with the budget: each phase's seconds, the
# ten slowest tests and the total, so the next person sees where the suite's time goes.
#
# Arguments go to the test binaries (a name filter, `--test-threads N`). The tests run in
# one process per target, `RUST_TEST_THREADS` at a time (default: twice the cores, since most
# tests wait on a child process or a server).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
export RUST_TEST_THREADS="${RUST_TEST_THREADS:-$(($(nproc) * 2))}"
started=$SECONDS
# A clean checkout (CI) builds once: incremental compilation's bookkeeping only costs there
# (measured: 31 s instead of 39 s for ragsweep's own targets).
if [ ! -d target/debug/incremental ]; then
  export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
fi
phases=()
phase() {
  local name="$1" at=$SECONDS
  shift
  "$@"
  phases+=("$(printf '%-8s %5d s' "$name" $((SECONDS - at)))")
}
# The installs (downloads, mostly waiting on the network) run beside the build (compiling,
# waiting on the cores); their output is printed once they are done, not interleaved.
installs() {
  phase models scripts/install-models.sh
  phase tools scripts/install-test-tools.sh
  phase engines scripts/install-engines.sh
  printf '%s\n' "${phases[@]}" >"$install_phases"
}
install_log="$(mktemp)" install_phases="$(mktemp)"
installs >"$install_log" 2>&1 &
installing=$!
phase build cargo test --locked --no-run
install_status=0
wait "$installing" || install_status=$?
cat "$install_log"
if [ "$install_status" -ne 0 ]; then
  echo "error: installing what the tests need failed (exit status $install_status); its output is above" >&2
  exit "$install_status"
fi
mapfile -t installed <"$install_phases"
rm -f "$install_log" "$install_phases"
phases=("${installed[@]/%/ (beside the build)}" "${phases[@]}")
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
at=$SECONDS
status=0
# libtest's per-test times (`--report-time`) are behind -Zunstable-options, which a stable
# toolchain's test binaries take under RUSTC_BOOTSTRAP=1; set for the test processes alone
# (through the runner), the build's fingerprints stay those of a plain `cargo test`.
cargo test --locked --config "target.'cfg(all())'.runner = ['env', 'RUSTC_BOOTSTRAP=1']" \
  -- -Zunstable-options --report-time "$@" 2>&1 | tee "$log" || status=$?
phases+=("$(printf '%-8s %5d s' run $((SECONDS - at)))")

echo
echo "== the suite's budget =="
printf '%s\n' "${phases[@]}"
printf '%-8s %5d s\n' total $((SECONDS - started))
echo "ten slowest tests (seconds, run $RUST_TEST_THREADS at a time):"
sed -nE 's/^test (.*) \.\.\. [a-zA-Z]+ <([0-9.]+)s>$/\2 \1/p' "$log" | sort -rn | awk 'NR <= 10' | awk '{printf "  %8.1f  %s\n", $1, $2}'
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i; if ($(i+1) ~ /^ignored/) g += $i } }
  END { printf "tests: %d passed, %d failed, %d skipped\n", p, f, g }' "$log"
exit "$status"
