"""Build-time tools that need torch (the ``export`` extra), and the torch-cuda engine's stages (``reference``,
``lstm``, ``products``), which the engine factory imports only when that engine is chosen."""
