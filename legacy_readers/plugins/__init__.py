"""Channel and plugin state: one module per plugin (``telegram``, ``matrix``, ``msteams``, ...).

Most modules declare :class:`~statekit.legacy_readers.plugins._state.PluginStateReader`
subclasses, which turn one legacy file into ``plugin_state_entries`` /
``plugin_blob_entries`` rows (``_state`` parses, counts, writes and reports);
files OpenClaw 2026.9.6 leaves to a plugin's own doctor are
``RetainedPluginFile`` / ``NotImportedReader`` declarations. ``installs``
(the installed-plugin index) and ``binding_approvals`` are plain readers of
their own tables. Kinds are those of the former ``plugin_*`` modules.
"""
