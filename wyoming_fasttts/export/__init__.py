"""Build-time tools that need torch (the ``export`` extra); never imported by the server at run time."""
