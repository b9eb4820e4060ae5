"""`python -m rlmon ...` runs the rlmon executable installed with this package."""
import os
import shutil
import sys
import sysconfig


def find_rlmon_bin():
    """The `rlmon` executable of this package's installation: the scripts folder of
    the environment (or of the user scheme) it was installed into, else PATH."""
    exe = "rlmon" + (sysconfig.get_config_var("EXE") or "")
    candidates = [sysconfig.get_path("scripts")]
    user = sysconfig.get_preferred_scheme("user") if hasattr(sysconfig, "get_preferred_scheme") else None
    if user:
        candidates.append(sysconfig.get_path("scripts", scheme=user))
    # Installed with --target or --prefix: the package's folder is .../lib/pythonX.Y/site-packages/rlmon.
    here = os.path.dirname(os.path.abspath(__file__))
    candidates.append(os.path.normpath(os.path.join(here, "..", "..", "..", "..", "bin")))
    candidates.append(os.path.normpath(os.path.join(here, "..", "bin")))
    for folder in candidates:
        if folder:
            path = os.path.join(folder, exe)
            if os.path.isfile(path) and os.access(path, os.X_OK):
                return path
    return shutil.which(exe)


def main():
    path = find_rlmon_bin()
    if path is None:
        sys.stderr.write("rlmon: the rlmon executable is not installed with this Python package "
                         "(pip install rlmon, or cargo install --path . from a checkout)\n")
        return 2
    if sys.platform == "win32":
        import subprocess
        return subprocess.call([path, *sys.argv[1:]])
    os.execv(path, [path, *sys.argv[1:]])


if __name__ == "__main__":
    sys.exit(main())
