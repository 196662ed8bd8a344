"""The robustness suite (see README.md): a package, so that its conftest does not shadow tests_py/conftest.py."""
