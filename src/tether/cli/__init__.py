"""The ``tether`` command. ``main`` (in ``tether.cli.main``) parses the arguments."""
