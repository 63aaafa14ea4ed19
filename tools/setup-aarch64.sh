#!/usr/bin/env bash
# Configure an aarch64 cross build (docs/isa.md): tools/setup-aarch64.sh BUILD [meson options...]
# Needs g++-aarch64-linux-gnu, qemu-user and libboost-test1.74-dev:arm64 (after
# dpkg --add-architecture arm64). The tests run under qemu-aarch64 (the cross file's
# exe_wrapper); QEMU_CPU picks the emulated CPU (cortex-a53: no dotprod; max: all).
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 BUILD [meson options...]" >&2; exit 2; }
build=$1; shift
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$build"
printf "[constants]\ncross_root = '%s'\n" "$root/cross/aarch64" > "$build/cross-root.ini"
exec meson setup "$build" "$root" --cross-file "$build/cross-root.ini" \
  --cross-file "$root/cross/aarch64-linux-gnu.ini" "$@"
