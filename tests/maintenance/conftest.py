"""Maintenance test fixtures.

``wired`` makes ``migrate.plan.build_plan`` fill ``Plan.steps`` from
``migrate.steps.plan_steps`` and makes ``migrate.apply.migrate`` relocate a
legacy-found state dir first, the way the lead wires them in (a no-op once
the real code does it).
"""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest


@pytest.fixture
def wired(monkeypatch: pytest.MonkeyPatch) -> bool:
    import statekit.migrate.apply as apply_mod
    import statekit.migrate.plan as plan_mod
    from statekit.migrate.relocate import relocate_state_dir
    from statekit.migrate.steps import plan_steps
    from statekit.layout import ResolvedStateDir

    patched = False
    if "plan_steps" not in inspect.getsource(plan_mod.build_plan):
        original_build = plan_mod.build_plan

        def build_plan(resolved, env=None, *args, **kwargs):
            plan = original_build(resolved, env, *args, **kwargs)
            plan.steps = plan_steps(plan, resolved if not isinstance(resolved, Path) else ResolvedStateDir(resolved, "flag"), env)
            return plan

        monkeypatch.setattr(plan_mod, "build_plan", build_plan)
        monkeypatch.setattr(apply_mod, "build_plan", build_plan)
        patched = True
    if "relocate_state_dir" not in inspect.getsource(apply_mod.migrate):
        original_migrate = apply_mod.migrate

        def migrate(resolved, options=None, progress=None):
            options = options or apply_mod.MigrateOptions()
            if not isinstance(resolved, Path):
                resolved = relocate_state_dir(resolved, options.env)
            return original_migrate(resolved, options, progress)

        monkeypatch.setattr(apply_mod, "migrate", migrate)
        patched = True
    return not patched  # True when the real code is wired (CLI subprocess tests can run)


@pytest.fixture(scope="session")
def migrated_corpus(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every corpus tree, migrated once (``--no-backup``) by the real apply loop; copy before mutating."""
    from helpers import corpus_tree_names, extract_corpus_tree
    from statekit.migrate.apply import MigrateOptions, migrate

    names = corpus_tree_names()
    if not names:
        pytest.skip("../shared/corpus is not available in this checkout")
    trees: dict[str, Path] = {}
    for index, name in enumerate(names):
        state = extract_corpus_tree(name, tmp_path_factory.mktemp(f"corpus{index}"))
        migrate(state, MigrateOptions(backup=False))
        trees[name] = state
    return trees

