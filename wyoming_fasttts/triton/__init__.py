"""Triton Inference Server: the model repository this project writes for it (``triton-repo``).

The client side (the ``triton`` engine) is ``backends/triton.py``; the files under ``models/`` are not
imported by the package: they are the Python-backend models copied into a generated repository, where
Triton's Python stub runs them with ``triton_python_backend_utils`` on its path.
"""
