"""The command line: ``kafka-inspector`` and its read, show, clients and topics output."""


def __getattr__(name: str) -> object:
    """``inspector.cli.run``, the entry point's name before the command line became a package: a console script
    installed then (``from inspector.cli import run``) still starts ``kafka-inspector`` until it is reinstalled."""
    if name == "run":
        from inspector.cli.main import run

        return run
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
