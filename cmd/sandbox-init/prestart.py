def _sandboxrun_job():
    # sandbox-init's pre-started interpreter (prestart.go). It runs before
    # any job exists and waits on fd 3 for one: the program's path, argc,
    # argv and the environment, NUL-terminated. It then becomes that job:
    # `python3 SCRIPT ARGS...` or `python3 - ARGS...` run the way CPython's
    # own main runs them; anything else is exec'd exactly as sandbox-init
    # would have started it. It imports nothing: os and sys are loaded by
    # every interpreter's start, and a script must find sys.modules as a
    # fresh interpreter leaves it.
    import os
    import sys

    chunks = []
    while True:
        chunk = os.read(3, 65536)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(3)
    fields = b"".join(chunks).split(b"\0")
    if len(fields) < 3:
        os._exit(0)  # discarded before a job came
    # The workspace may be the host's copy-on-write view, mounted over the
    # folder this interpreter started in: enter it again by its name.
    try:
        os.chdir(os.getcwd())
    except OSError:
        pass
    path, argc = fields[0], int(fields[1])
    argv, env = fields[2:2 + argc], fields[2 + argc:-1]

    def become_the_command():
        import _signal  # loaded by every interpreter's start

        # CPython ignores these at start; exec keeps ignored signals
        # ignored, and sandbox-init starts a job with the defaults.
        for name in ("SIGPIPE", "SIGXFSZ"):
            _signal.signal(getattr(_signal, name), _signal.SIG_DFL)
        try:
            os.execve(path, argv, dict(kv.split(b"=", 1) for kv in env))
        except OSError as e:
            os.write(2, b"sandbox-init: exec " + path + b": " + os.fsencode(e.strerror or "failed") + b"\n")
            os._exit(126)

    args = [os.fsdecode(a) for a in argv]
    if len(args) < 2 or (args[1].startswith("-") and args[1] != "-"):
        become_the_command()  # interactive, or options this does not mimic

    # The job's environment, also for the C library (putenv): sandbox-init
    # only hands a job over when everything that can shape an interpreter's
    # start is the same as this one's.
    wanted = dict(kv.split(b"=", 1) for kv in env)
    for k in [k for k in os.environb if k not in wanted]:
        del os.environb[k]
    for k, v in wanted.items():
        if os.environb.get(k) != v:
            os.environb[k] = v

    main = sys.modules["__main__"].__dict__
    del main["_sandboxrun_job"]
    if args[1] == "-":
        source = sys.stdin.buffer.read()
        filename = "<stdin>"
    else:
        # Made absolute as CPython's main does it: joined, not normalised.
        filename = args[1] if args[1].startswith("/") else os.getcwd() + "/" + args[1]
        bootstrap = sys.modules["_frozen_importlib_external"]
        # As CPython's main: a zip file or a folder runs its __main__
        # module, and the path ends up in the importer cache either way.
        sys.path_importer_cache[filename] = None
        for hook in sys.path_hooks:
            try:
                hook(filename)
            except ImportError:
                continue
            except Exception:
                pass  # CPython reports that itself
            become_the_command()
        try:
            with open(filename, "rb") as f:
                source = f.read()
        except OSError:
            become_the_command()  # CPython says why, in its words
        if filename.endswith(".pyc") or source[:2] == bootstrap.MAGIC_NUMBER[:2]:
            become_the_command()
        main["__loader__"] = bootstrap.SourceFileLoader("__main__", filename)
        sys.path[0] = os.path.dirname(os.path.realpath(filename))
    main["__file__"] = filename
    main["__cached__"] = None
    sys.argv = args[1:]
    sys.orig_argv = args
    me = sys._getframe().f_code

    def flush_io():
        for stream in (sys.stderr, sys.stdout):
            try:
                stream.flush()
            except Exception:
                pass

    def forget_file():
        # CPython's main takes these back once the script is done, before
        # atexit handlers run (but not on SystemExit, which exits at once).
        main.pop("__file__", None)
        main.pop("__cached__", None)

    try:
        exec(compile(source, filename, "exec", dont_inherit=True), main)
    except (SystemExit, KeyboardInterrupt):
        raise  # the interpreter's own handling: exit status, or death by SIGINT
    except BaseException as e:
        # What the interpreter does with an uncaught exception, with this
        # function's frame left out of the traceback.
        flush_io()
        tb = e.__traceback__
        while tb is not None and tb.tb_frame.f_code is me:
            tb = tb.tb_next
        e.__traceback__ = tb
        sys.last_type, sys.last_value, sys.last_traceback = type(e), e, tb
        sys.excepthook(type(e), e, tb)
        forget_file()
        raise SystemExit(1) from None
    flush_io()
    forget_file()


_sandboxrun_job()
