#!/usr/bin/env bash
# Builds Fluent Bit for bench/peer.sh from a source tree it is given (the
# fluent/fluent-bit repository at tag v5.1.1): release mode (-O2), the
# minimal build with what the comparison uses — in_stdin, in_tail, out_http,
# out_null, the storage backlog, SQLDB on the system SQLite — and no AWS or
# simdutf, AWS SigV4, Kafka, LuaJIT or WASM (LuaJIT's build asks git for its version, which
# a tree without .git cannot answer). With FLB_AWS=Off its src/flb_http_client.c lacks two includes
# (flb_upstream_node.h, flb_upstream_ha.h): added in a copy of the tree,
# never in the tree given. Prints the binary's path.
#
#   bench/peer/build-fluent-bit.sh SOURCE_DIR OUT_DIR
#
# Cached: OUT_DIR/fluent-bit-<version>/bin/fluent-bit is built once.
# Needs cmake, flex, bison, libyaml-dev, libsqlite3-dev, libssl-dev.
set -euo pipefail
source=$(realpath "${1:?usage: build-fluent-bit.sh SOURCE_DIR OUT_DIR}")
out=${2:?usage: build-fluent-bit.sh SOURCE_DIR OUT_DIR}
[ -f "$source/src/flb_http_client.c" ] || { echo "build-fluent-bit: $source is not a Fluent Bit source tree" >&2; exit 2; }
for tool in cmake flex bison; do
    command -v "$tool" >/dev/null || { echo "build-fluent-bit: $tool is missing: apt-get install cmake flex bison libyaml-dev" >&2; exit 1; }
done
version=$(sed -n 's/^set(FLB_VERSION_\(MAJOR\|MINOR\|PATCH\) *\([0-9]*\))/\2/p' "$source/CMakeLists.txt" | paste -sd.)
build=$(realpath -m "$out/fluent-bit-$version")
binary=$build/build/bin/fluent-bit
if [ ! -x "$binary" ]; then
    # A build cut short is resumed: the copy and the objects are kept.
    if [ ! -d "$build/src" ]; then
        mkdir -p "$build"
        cp -a "$source" "$build/src.partial"
        rm -rf "$build/src.partial/.git"
        mv "$build/src.partial" "$build/src"
    fi
    client=$build/src/src/flb_http_client.c
    grep -q 'flb_upstream_node.h' "$client" ||
        sed -i 's|#include <fluent-bit/flb_http_client.h>|#include <fluent-bit/flb_http_client.h>\n#include <fluent-bit/flb_upstream_node.h>\n#include <fluent-bit/flb_upstream_ha.h>|' "$client"
    cmake -S "$build/src" -B "$build/build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_FLAGS_RELEASE=-O2 \
        -DFLB_RELEASE=On -DFLB_MINIMAL=On -DFLB_IN_STDIN=On -DFLB_IN_TAIL=On -DFLB_IN_STORAGE_BACKLOG=On \
        -DFLB_OUT_HTTP=On -DFLB_OUT_NULL=On -DFLB_SQLDB=On -DFLB_PREFER_SYSTEM_LIB_SQLITE=On \
        -DFLB_USE_SIMDUTF=No -DFLB_AWS=Off -DFLB_EXAMPLES=Off -DFLB_SHARED_LIB=Off \
        -DFLB_LUAJIT=Off -DFLB_WASM=Off -DFLB_SIGNV4=Off -DFLB_KAFKA=Off >"$build/cmake.log" 2>&1 ||
        { tail -20 "$build/cmake.log" >&2; exit 1; }
    make -C "$build/build" -j"$(nproc)" fluent-bit-bin >"$build/make.log" 2>&1 ||
        { tail -30 "$build/make.log" >&2; exit 1; }
fi
echo "$binary"
