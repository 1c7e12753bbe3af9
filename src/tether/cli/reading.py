"""The old home of ``tether.coding.reading`` (reading a file a person named without letting
it hold or flood the command): its names, re-exported for ``tether.cli.config``."""

from tether.coding.reading import UnreadableFile, UnreadableKind, read_file_head, read_regular_file

__all__ = ["UnreadableFile", "UnreadableKind", "read_file_head", "read_regular_file"]
