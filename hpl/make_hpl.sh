#!/bin/sh
# `make hpl`: HPL for `lu --algo hpl` on Debian/Ubuntu (as root or with sudo).
#
#   hpl/make_hpl.sh VENV
#
# Installs OpenBLAS and a C compiler, fetches the source package of HPC Challenge
# (hpcc, whose tarball carries HPL 2.0) with `apt-get source --download-only` (adding
# deb-src twins of the system's deb entries in /etc/apt/sources.list.d/ when there are
# none; only the orig tarball is needed, a missing debian.tar.xz does not matter), builds
# it with hpl/build.sh against the venv's mpicc into VENV/lib/hpl. Without apt-get it
# says what to do instead and does nothing.
set -eu
venv=$1
here=$(cd "$(dirname "$0")" && pwd)
out="$venv/lib/hpl"
if ! command -v apt-get >/dev/null 2>&1; then
  echo "make hpl: no apt-get here; build HPL with hpl/build.sh HPL-SOURCE.tar.gz DIR (MPICC=your mpicc) and use --hpl DIR"
  exit 0
fi
sudo=""
[ "$(id -u)" = 0 ] || sudo=sudo
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends libopenblas-dev gcc libc6-dev dpkg-dev >/dev/null
src="$(pwd)/build/hpl-source"
mkdir -p "$src"
fetch() { (cd "$src" && apt-get source --download-only hpcc >/dev/null 2>&1) || true; }
ls "$src"/hpcc_*.orig.tar.gz >/dev/null 2>&1 || fetch
if ! ls "$src"/hpcc_*.orig.tar.gz >/dev/null 2>&1; then
  # deb-src twins of the system's own deb entries (same mirrors, suites and Signed-By,
  # which apt requires to agree for one source)
  system=""
  for f in /etc/apt/sources.list.d/debian.sources /etc/apt/sources.list.d/ubuntu.sources; do
    [ -f "$f" ] && system=$f && break
  done
  if [ -n "$system" ]; then
    sed 's/^Types: deb$/Types: deb-src/' "$system" |
      $sudo tee /etc/apt/sources.list.d/linalg-io-deb-src.sources >/dev/null
  elif [ -f /etc/apt/sources.list ]; then
    sed -n 's/^deb \(.*\)/deb-src \1/p' /etc/apt/sources.list |
      $sudo tee /etc/apt/sources.list.d/linalg-io-deb-src.list >/dev/null
  fi
  $sudo apt-get update -qq
  fetch
fi
tarball=$(ls "$src"/hpcc_*.orig.tar.gz 2>/dev/null | head -n 1)
if [ -z "$tarball" ]; then
  echo "make hpl: apt-get source --download-only hpcc fetched no hpcc_*.orig.tar.gz" >&2
  exit 1
fi
MPICC="$venv/bin/mpicc" "$here/build.sh" "$tarball" "$out"
