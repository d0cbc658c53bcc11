"""Project test configuration: load the numba_tile pytest plugin when the package is used
from a source checkout (an installed package registers it through its entry point)."""


def pytest_configure(config):
    if not config.pluginmanager.has_plugin("numba_tile"):
        from numba_tile.testing import plugin

        config.pluginmanager.register(plugin, "numba_tile")
        plugin.pytest_configure(config)
