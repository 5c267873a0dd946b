"""The subcommands' own code: their flags and what they run. ``__main__`` imports one only when it runs."""
