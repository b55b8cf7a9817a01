#!/usr/bin/python3
"""Fails when the build used a Debian package that scripts/dev/install_deps.sh
does not install (issue 10 section 1: qt6-charts-dev only *recommends*
libqt6opengl6-dev, install_deps.sh installs without recommends, and a
machine that had it from earlier could not see the gap).

Every file the build read -- the compiler's dependency files (Ninja's
.ninja_deps, through `ninja -t deps`), the package folders CMake found (the
*_DIR entries of CMakeCache.txt: their *Config.cmake files) and the libraries
linked (LINK_LIBRARIES in build.ninja) -- is mapped to the package that owns
it (dpkg's file lists, as `dpkg -S` reads them). Each such package must be
in install_deps.sh's list or in the Depends closure of the list
(`apt-cache depends --recurse --no-recommends ...`), which is cached in the
build folder until the list or the apt/dpkg state changes.

usage: scripts/dev/check_deps.py [--without PACKAGE]... [BUILD_DIR]   (default build/release)
--without checks as if PACKAGE were not in the list (to see the check fail).
exit 0: every package is accounted for; 1: some are not (each is named with
the files that needed it); 2: the check itself could not run.
"""
import glob
import hashlib
import os
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLOSURE_OPTIONS = ["--recurse", "--no-recommends", "--no-suggests", "--no-conflicts", "--no-breaks",
                   "--no-replaces", "--no-enhances"]


def listed_packages():
    out = subprocess.run([os.path.join(ROOT, "scripts/dev/install_deps.sh"), "--list"], check=True,
                         capture_output=True, text=True).stdout
    return sorted(set(out.split()))


def mtime(path):
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return 0


def depends_closure(packages, cache_dir):
    """Every package apt would install for `packages` without recommends:
    the names apt-cache depends --recurse visits (virtual ones included)."""
    key = hashlib.sha256("\n".join(packages + [str(mtime("/var/lib/dpkg/status")),
                                               str(mtime("/var/lib/apt/lists"))]).encode()).hexdigest()[:16]
    cache = os.path.join(cache_dir, f"closure-{key}.txt")
    if os.path.exists(cache):
        with open(cache) as f:
            return set(f.read().split())
    out = subprocess.run(["apt-cache", "depends", *CLOSURE_OPTIONS, *packages], check=True,
                         capture_output=True, text=True).stdout
    closure = set()
    for line in out.splitlines():
        name = line.strip()
        if ":" in name and not line.startswith(" "):
            name = name.split(":")[0]
        elif line.startswith(" "):
            name = line.split(":", 1)[1].strip() if ":" in line else ""
        name = name.strip("<>").split(":")[0]
        if name:
            closure.add(name)
    os.makedirs(cache_dir, exist_ok=True)
    for old in glob.glob(os.path.join(cache_dir, "closure-*.txt")):
        os.remove(old)
    with open(cache + ".partial", "w") as f:
        f.write("\n".join(sorted(closure)) + "\n")
    os.replace(cache + ".partial", cache)
    return closure


def dpkg_owners():
    """path -> package, from dpkg's file lists (what `dpkg -S` searches)."""
    owners = {}
    for listing in glob.glob("/var/lib/dpkg/info/*.list"):
        package = os.path.basename(listing)[:-len(".list")].split(":")[0]
        with open(listing, errors="replace") as f:
            for path in f.read().splitlines():
                owners.setdefault(path, package)
    return owners


def files_read(build_dir):
    files = {}  # path -> why it was read

    def add(path, why):
        if path.startswith("/") and not path.startswith((ROOT + "/", build_dir + "/")):
            files.setdefault(os.path.normpath(path), why)

    deps = subprocess.run(["ninja", "-C", build_dir, "-t", "deps"], check=True, capture_output=True,
                          text=True).stdout
    target = ""
    for line in deps.splitlines():
        if not line.startswith(" "):
            target = line.split(":")[0]
        else:
            add(line.strip(), "compiling " + target)
    with open(os.path.join(build_dir, "CMakeCache.txt")) as f:
        for line in f:
            match = re.match(r"^([A-Za-z0-9_]+_DIR):(PATH|INTERNAL|STATIC)=(/.*)$", line.rstrip("\n"))
            if not match or not os.path.isdir(match.group(3)):
                continue
            for config in glob.glob(os.path.join(match.group(3), "*[Cc]onfig.cmake")):
                add(config, "CMake's " + match.group(1))
    with open(os.path.join(build_dir, "build.ninja")) as f:
        for line in f:
            if line.strip().startswith("LINK_LIBRARIES = "):
                for word in line.split("=", 1)[1].split():
                    if word.startswith("/"):
                        add(word, "linking")
    return files


def owner_of(path, owners):
    """dpkg lists paths as shipped: /lib/... and /usr/lib/... are one folder
    on a merged-/usr system, and symlinks resolve elsewhere."""
    candidates = [path, os.path.realpath(path)]
    for candidate in list(candidates):
        for merged, split in (("/usr/lib/", "/lib/"), ("/usr/bin/", "/bin/"), ("/usr/sbin/", "/sbin/")):
            if candidate.startswith(merged):
                candidates.append(split + candidate[len(merged):])
            elif candidate.startswith(split):
                candidates.append(merged + candidate[len(split):])
    for candidate in candidates:
        if candidate in owners:
            return owners[candidate]
    return None


def main():
    started = time.monotonic()
    args = sys.argv[1:]
    without = set()
    while len(args) >= 2 and args[0] == "--without":
        without.add(args[1])
        args = args[2:]
    build_dir = os.path.abspath(args[0] if args else os.path.join(ROOT, "build/release"))
    if not os.path.exists(os.path.join(build_dir, ".ninja_deps")):
        print(f"check_deps: {build_dir} has no .ninja_deps; build first (scripts/dev/build.sh)", file=sys.stderr)
        return 2
    packages = [p for p in listed_packages() if p not in without]
    closure = depends_closure(packages, os.path.join(build_dir, "deps-check")) | set(packages)
    owners = dpkg_owners()
    needed = {}  # package -> [(path, why)]
    unowned = []
    files = files_read(build_dir)
    for path, why in sorted(files.items()):
        package = owner_of(path, owners)
        if package is None:
            unowned.append(path)
        else:
            needed.setdefault(package, []).append((path, why))
    missing = sorted(p for p in needed if p not in closure)
    elapsed = time.monotonic() - started
    if unowned:
        print(f"check_deps: {len(unowned)} file(s) the build read belong to no Debian package "
              f"(installed by hand?), e.g. {', '.join(unowned[:3])}", file=sys.stderr)
    if missing:
        print("check_deps: the build uses Debian packages that scripts/dev/install_deps.sh does not install "
              "(neither listed nor a Depends of a listed package; a Recommends is not installed):",
              file=sys.stderr)
        for package in missing:
            paths = needed[package]
            shown = "; ".join(f"{path} ({why})" for path, why in paths[:3])
            more = f"; and {len(paths) - 3} more" if len(paths) > 3 else ""
            print(f"  {package}: {shown}{more}", file=sys.stderr)
        print("add them to PACKAGES in scripts/dev/install_deps.sh", file=sys.stderr)
        return 1
    print(f"check_deps: the {len(files)} files the build read come from {len(needed)} Debian packages, "
          f"all installed by scripts/dev/install_deps.sh ({elapsed:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
