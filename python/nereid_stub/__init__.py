"""The child side of Nereid's Python backend: the runtime a stub process runs around a Triton `model.py`.

The host (src/backends/python, Node) starts one stub process per model instance. This package speaks the
control protocol with it over a Unix socket (`frames`), moves large tensors through /dev/shm files
(`shm`), and implements the objects `triton_python_backend_utils` exposes to models (`api`). Models never
import this package directly; they import `triton_python_backend_utils`.
"""
