#!/usr/bin/env bash
# Fuzzes the agent's input parsers with libFuzzer and AddressSanitizer.
#
#   scripts/fuzz.sh [--seconds N] [--build-only] [TARGET...]
#
# Run scripts/fuzz.sh --help for the targets, what they check, the output
# layout and how to reproduce a crash.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
    cat <<'EOF'
Usage: scripts/fuzz.sh [--seconds N] [--build-only] [TARGET...]

Builds libFuzzer targets for the agent's input parsers with swiftc (not
SwiftPM: it never touches .build/ or Package.swift) and runs each for N
seconds. TARGET is any of (default: all, in this order):

  ndjson  bytes -> LineFramer -> NDJSONParser -> ReadingRouter/validation
          (Fuzz/NDJSONFuzz.swift)
  csv     bytes -> LineFramer -> CSVParser (header, rows) -> validation
          (Fuzz/CSVFuzz.swift)
  toml    text -> TOMLDocument.parse, the configuration parser
          (Fuzz/TOMLFuzz.swift)
  mqtt    bytes from a broker -> MQTTPacketReader -> MQTTPacket.decode
          (Fuzz/MQTTFuzz.swift), the MQTT input's protocol reader
  http    bytes from a client of the HTTP input -> HTTPRequestFramer ->
          HTTPHeadParser -> gzip decoding (Fuzz/HTTPFuzz.swift), the
          gateway's request reader
  nats    bytes from a NATS server -> NATSProtocolReader
          (Fuzz/NATSFuzz.swift), the JetStream sink's protocol reader

Besides "no crash", the targets check invariants with preconditions, so a
violation is a crash too: the framer splits like a reference whatever the
chunking and line limit; firstInvalidUTF8 agrees with the standard library;
a parsed line or row written back parses the same; every non-blank line
within the line limit (2 KiB here) becomes a record, a rejection with a
known reason and a short message, or (csv) the header; a record's
JSON (JSONWriter) reads back as the same record; a parsed TOML document
written back parses the same; MQTT packets frame the same however the
stream is cut into reads, and a decoded PUBLISH written again decodes the
same; HTTP requests frame the same however the stream is cut, smuggling
shapes are refused and a gzip body never decodes past the limit. Each
Fuzz/*.swift file lists its checks.

Options:
  --seconds N   fuzz each target for N seconds (default 60; CI uses 20);
                also --seconds=N
  --build-only  build the targets, do not run them
  -h, --help    this text

Build: the EdgeIngestModel target's source files (the pure model and
parsers: no SQLite, curl, OpenSSL or swift-log) are compiled as that module,
then each Fuzz/<Name>Fuzz.swift (with Fuzz/FuzzSupport.swift) is linked
against it, all with -sanitize=fuzzer,address -O -assert-config Debug: optimized
for executions per second, but keeping the debug-only bounds checks of
Unsafe(Raw)BufferPointer that plain -O removes (the parsers index raw
buffers, and ASan does not see a read past a slice inside a larger buffer).
Modules and objects are rebuilt only when a source or this script changed.

Run: each target runs over its working corpus .build-fuzz/corpus/TARGET/,
a copy of the committed seeds Fuzz/corpus/TARGET/ plus what earlier local
runs found (the committed corpus never grows; delete .build-fuzz/corpus to
start over), with -rss_limit_mb=512, -timeout=10 (seconds per input) and
-max_len 4096 (ndjson, csv, mqtt, http, nats) or 16384 (toml). Leaks are detected (LSan);
ASan's quarantine is 64 MB (ASAN_OPTIONS adds to or overrides that).

Needs the Swift toolchain's clang runtime (libFuzzer, ASan) and lld, both
shipped with the toolchain.

Output in .build-fuzz/ (git-ignored):
  ndjson, csv, toml, mqtt, http, nats  the fuzzer binaries
  modules/, obj/         the instrumented EdgeIngestModel module
  corpus/TARGET/         the working corpus (seeds + local finds)
  logs/TARGET.log        the whole libFuzzer output of the last run
  artifacts/TARGET/      crash-*, leak-*, timeout-*, oom-* inputs; with CI
                         set, the failing input is also printed as base64
                         (a CI machine's .build-fuzz/ is not kept)

Reproduce a finding (runs just that input, prints the failed check):
  SWIFT_BACKTRACE=enable=no .build-fuzz/TARGET FILE
Shrink it:
  SWIFT_BACKTRACE=enable=no .build-fuzz/TARGET -minimize_crash=1 -runs=20000 FILE
Any libFuzzer flag works on the binaries (-help=1 lists them).

Once the bug an input found is fixed, commit the input to Fuzz/corpus/TARGET/
as regression-<what>.<ext>, with a unit test for the bug
(docs/RELIABILITY.md, "Fuzzing", lists the findings so far).

Exit codes: 0 no finding, 1 a target crashed, leaked, ran out of memory or
timed out (each is reported with its saved input), or the build failed;
2 bad arguments.
EOF
}

seconds=60
build_only=0
targets=()
while [ $# -gt 0 ]; do
    case "$1" in
        --seconds)
            [ $# -ge 2 ] || { echo "fuzz.sh: --seconds needs a value" >&2; exit 2; }
            seconds="$2"
            shift 2
            ;;
        --seconds=*) seconds="${1#*=}"; shift ;;
        --build-only) build_only=1; shift ;;
        -h | --help) usage; exit 0 ;;
        -*) echo "fuzz.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
        *) targets+=("$1"); shift ;;
    esac
done
[[ "$seconds" =~ ^[1-9][0-9]*$ ]] || { echo "fuzz.sh: --seconds wants a positive whole number, got '$seconds'" >&2; exit 2; }

all_targets=(ndjson csv toml mqtt http nats)
declare -A target_source=([ndjson]=Fuzz/NDJSONFuzz.swift [csv]=Fuzz/CSVFuzz.swift [toml]=Fuzz/TOMLFuzz.swift [mqtt]=Fuzz/MQTTFuzz.swift [http]=Fuzz/HTTPFuzz.swift [nats]=Fuzz/NATSFuzz.swift)
declare -A target_max_len=([ndjson]=4096 [csv]=4096 [toml]=16384 [mqtt]=4096 [http]=4096 [nats]=4096)
[ ${#targets[@]} -gt 0 ] || targets=("${all_targets[@]}")
for t in "${targets[@]}"; do
    [ -n "${target_source[$t]:-}" ] || { echo "fuzz.sh: unknown target '$t' (targets: ${all_targets[*]})" >&2; exit 2; }
done

# The parsers and what they use: the whole EdgeIngestModel target, as
# Package.swift declares it (no C library, no I/O, no swift-log), so a file
# added to it is fuzzed without a list to keep here.
mapfile -t model_sources < <(find Sources/EdgeIngestModel -name '*.swift' | sort)

out=.build-fuzz
mkdir -p "$out/modules" "$out/obj" "$out/logs"
flags=(
    -swift-version 6 -parse-as-library -package-name edgeingest
    -O -assert-config Debug -gline-tables-only
    -sanitize=fuzzer,address
)

# elapsed START: seconds since START (a date +%s.%N), one decimal.
elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }

# stale OUTPUT INPUT...: whether OUTPUT is missing or older than an input or this script.
stale() {
    local output="$1"
    shift
    [ -e "$output" ] || return 0
    local f
    for f in "$@" scripts/fuzz.sh; do [ "$f" -nt "$output" ] && return 0; done
    return 1
}

# module NAME INPUT...: NAME.swiftmodule and NAME.o from the .swift inputs
# (the others are dependencies), instrumented, importable with @testable.
module() {
    local name="$1"
    shift
    stale "$out/obj/$name.o" "$@" || return 0
    local sources=()
    local f
    for f in "$@"; do [[ "$f" == *.swift ]] && sources+=("$f"); done
    echo "fuzz.sh: compiling module $name (${#sources[@]} files)"
    # An explicit return: set -e is off inside a function called left of ||.
    swiftc "${flags[@]}" -module-name "$name" -I "$out/modules" -enable-testing -wmo \
        -emit-module -emit-module-path "$out/modules/$name.swiftmodule" \
        -c "${sources[@]}" -o "$out/obj/$name.o" || return 1
    touch "$out/obj/$name.o"  # swiftc leaves an unchanged object file's time alone
}

build_started=$(date +%s.%N)
module EdgeIngestModel "${model_sources[@]}" || { echo "fuzz.sh: the build failed" >&2; exit 1; }
pids=()
build_failed=0
for t in "${targets[@]}"; do
    sources=("${target_source[$t]}")
    extra=()
    case "$t" in
    ndjson | csv) sources+=(Fuzz/FuzzSupport.swift) ;;
    http)
        # The gateway's request reader and gzip decoding, compiled into the
        # target (they need nothing else of IngestGateway or EdgeIngestCore).
        sources+=(Sources/IngestGateway/HTTP/HTTPRequest.swift Sources/IngestGateway/HTTP/HTTPRequestFramer.swift
            Sources/EdgeIngestCore/Upload/Gzip.swift)
        extra=(-I Sources/CZlib -lz)
        ;;
    esac
    stale "$out/$t" "${sources[@]}" "$out/obj/EdgeIngestModel.o" || continue
    echo "fuzz.sh: building $out/$t"
    # The targets are independent: link them two at a time (one per core).
    swiftc "${flags[@]}" -module-name "Fuzz_$t" -I "$out/modules" -use-ld=lld "${extra[@]}" \
        "${sources[@]}" "$out/obj/EdgeIngestModel.o" -o "$out/$t" &
    pids+=($!)
    if [ ${#pids[@]} -ge 2 ]; then
        wait "${pids[0]}" || build_failed=1
        pids=("${pids[@]:1}")
    fi
done
for pid in "${pids[@]}"; do wait "$pid" || build_failed=1; done
if [ "$build_failed" = 1 ]; then
    echo "fuzz.sh: the build failed" >&2
    exit 1
fi
echo "fuzz.sh: build took $(elapsed "$build_started") s"
[ "$build_only" = 0 ] || exit 0

# Swift's own crash backtracer would hold a crashing fuzzer for a long time;
# libFuzzer and ASan print the stack.
export SWIFT_BACKTRACE=enable=no
# ASan's quarantine (256 MB by default) alone would take half of the 512 MB
# RSS limit; 64 MB still holds freed memory long enough to catch a use after free.
export ASAN_OPTIONS="quarantine_size_mb=64${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
if [ -z "${ASAN_SYMBOLIZER_PATH:-}" ] && symbolizer=$(command -v llvm-symbolizer); then
    export ASAN_SYMBOLIZER_PATH="$symbolizer"
fi

failed=()
for t in "${targets[@]}"; do
    corpus="$out/corpus/$t"
    artifacts="$out/artifacts/$t"
    log="$out/logs/$t.log"
    mkdir -p "$corpus" "$artifacts"
    # The seeds always, so an edited seed runs as committed (libFuzzer names
    # what it finds by hash: nothing of the working corpus is overwritten).
    cp Fuzz/corpus/"$t"/* "$corpus/"
    echo "fuzz.sh: fuzzing $t for $seconds s (log: $log)"
    started=$(date +%s.%N)
    status=0
    "$out/$t" -max_total_time="$seconds" -rss_limit_mb=512 -max_len="${target_max_len[$t]}" -timeout=10 \
        -artifact_prefix="$artifacts/" -print_final_stats=1 "$corpus" >"$log" 2>&1 || status=$?
    took=$(elapsed "$started")
    if [ "$status" = 0 ]; then
        done_line=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -n 1 || true)
        echo "fuzz.sh: $t: no finding in $took s: ${done_line:-?}"
        continue
    fi
    failed+=("$t")
    echo "fuzz.sh: $t: FAILED (exit $status) after $took s; from $log:" >&2
    # The failed check (a Swift runtime error), the sanitizer's verdict, the
    # stack frames in Sources/ and Fuzz/ (symbolized), or else the log's end.
    report=$(
        grep -E -m 1 ': (Fatal error|Precondition failed|Assertion failed)' "$log" | cut -c 1-2000 || true
        grep -E -m 1 'ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)' "$log" || true
        grep -E '^ +#[0-9]+ .*/(Sources|Fuzz)/' "$log" | head -n 12 || true
        grep -E -m 1 '^SUMMARY: ' "$log" || true
    )
    [ -n "$report" ] || report=$(tail -n 30 "$log")
    printf '%s\n' "$report" | sed 's/^/    /' >&2
    saved=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -n 1)
    if [ -n "$saved" ]; then
        if [ -n "${CI:-}" ]; then
            echo "fuzz.sh: $t: the input as base64 (base64 -d > input):" >&2
            base64 -w0 "$saved" >&2
            echo >&2
        fi
        echo "fuzz.sh: $t: the input was saved to $saved; reproduce with:" >&2
        case "$(basename "$saved")" in
            timeout-*) echo "    SWIFT_BACKTRACE=enable=no $out/$t -timeout=10 $saved" >&2 ;;
            *) echo "    SWIFT_BACKTRACE=enable=no $out/$t $saved" >&2 ;;
        esac
    else
        echo "fuzz.sh: $t: libFuzzer saved no input; see $log" >&2
    fi
done

if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzz.sh: findings in: ${failed[*]}" >&2
    exit 1
fi
echo "fuzz.sh: no findings (${targets[*]}, $seconds s each)"
