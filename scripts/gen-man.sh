#!/bin/sh
# Generate the man pages from kbpkg's command table: gen-man.sh KBPKG_BINARY OUTDIR
# writes OUTDIR/kbpkg.1 and OUTDIR/kbpkg-COMMAND.1 for every command (`kbpkg help --man`).
set -eu
bin=$1
out=$2
mkdir -p "$out"
"$bin" help --man > "$out/kbpkg.1.tmp"
mv "$out/kbpkg.1.tmp" "$out/kbpkg.1"
for cmd in $("$bin" help --json | sed -n 's/^ *"name": "\([a-z0-9-]*\)",*$/\1/p'); do
  "$bin" help --man "$cmd" > "$out/kbpkg-$cmd.1.tmp"
  mv "$out/kbpkg-$cmd.1.tmp" "$out/kbpkg-$cmd.1"
done
