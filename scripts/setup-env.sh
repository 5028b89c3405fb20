#!/usr/bin/env bash
# Install everything lakebench needs on a fresh Debian 12 machine, idempotently:
# Debian packages (LMDB headers for the Cython store, a JDK for Fedora), a
# virtualenv in .venv, and lakebench itself (editable, with its extras).
# Called by `make bench` / `make test`; safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
VENV=${VENV:-.venv}

# LMDB headers and a C compiler build the store core; Java runs Fedora (a JDK
# already on PATH, of any vendor, serves as well as Debian's).
packages=(liblmdb-dev lmdb-utils build-essential)
# The report is tested in a real browser: Debian's Chromium and its WebDriver
# (a browser that downloads its own build cannot be fetched on every machine).
packages+=(chromium chromium-driver)
command -v java >/dev/null 2>&1 || packages+=(openjdk-17-jre-headless)
# Python's headers build the store core and, on first use, LAKEsuperior's C
# (Debian's python3 ships them apart).
"$PYTHON" -c 'import os, sys, sysconfig; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' \
  || packages+=(python3-dev)
missing=()
for pkg in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}"
  if [ "$(id -u)" -eq 0 ]; then SUDO=; elif command -v sudo >/dev/null; then SUDO=sudo; else
    echo "setup: error: need root (or sudo) to install ${missing[*]}" >&2; exit 2; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# cargo builds lakebench._sparql (ext/sparql/, Rust 1.74 or later): this
# machine kind has it from rustup, in ~/.cargo/bin; Debian 12's rustc is too old.
if ! command -v cargo >/dev/null 2>&1; then
  if [ -x "$HOME/.cargo/bin/cargo" ]; then export PATH="$HOME/.cargo/bin:$PATH"; else
    echo "setup: error: cargo (Rust 1.74 or later, from rustup) is needed to build ext/sparql" >&2; exit 2; fi
fi

if [ ! -x "$VENV/bin/python" ]; then
  echo "setup: creating virtualenv $VENV"
  "$PYTHON" -m venv "$VENV"
  "$VENV/bin/pip" install -q --upgrade pip
fi
# cargo's release build of ext/sparql (about a minute on two cores, nearly all of it the
# dependencies) is kept between checkouts, as pip keeps its wheels: a fresh clone of the same
# sources links in seconds.  A CARGO_TARGET_DIR of the caller's wins.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/lakebench/cargo-target}"
echo "setup: installing lakebench and its Python dependencies into $VENV"
# setuptools prints a boxed "Editable installation" notice on every editable
# install (the package at the top of the checkout is what the editable
# install points at, on purpose): nothing for the user to act on.
PYTHONWARNINGS="ignore:Editable installation:UserWarning" "$VENV/bin/pip" install -q -e '.[test,docs]'
