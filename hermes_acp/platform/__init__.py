"""The platform seam: every mechanism that differs between Linux, macOS and Windows, one small module per concern,
each choosing its backend once per process. Nothing else in the package imports an OS-only module (``fcntl``,
``resource``, ``termios``, ``pwd``, ``grp``, ``msvcrt``, ``winreg``, ``_winapi``) or touches ``signal.SIG*``,
``os.killpg``, ``os.getuid`` or ``socket.SO_PEERCRED`` (``tests/unit/test_platform_audit.py`` checks it).

- ``system``: which system this is (Linux, WSL2, macOS, Windows), its sandbox backend, shared mode, socket paths,
  the variables a child needs;
- ``signals``: shutdown signals, naming a child's signal, the polite and the hard signal;
- ``processes``: starting a child as a tree, counting and ending it (process group, or psutil);
- ``locks``: advisory locks on an open file (portalocker);
- ``peers``: Unix-socket peer credentials (``SO_PEERCRED``, ``LOCAL_PEERCRED``) and file owners;
- ``shells``: the shell a command runs in (bash, sh, PowerShell, cmd);
- ``case``: the case rule of policy decisions (names folded on every system);
- ``rlimits``: per-process limits and the launcher that sets them;
- ``disk``: free space, read-only mounts, the file-size limit;
- ``facts``: what is contained, what asks and what is missing here (``--check`` and the README's table).

Standard library only at import time (psutil and portalocker load inside the functions that need them), so the
front door may use it. It sits in the bottom layer, beside ``core``, and imports nothing of the package above it.
"""

__all__: list[str] = []
"""Nothing is re-exported here: import the module that has the name."""
