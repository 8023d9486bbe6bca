"""Package discovery for the one distribution, `rewardsmith`.

Each top-level folder of the checkout is installed as a sub-package of
`rewardsmith` (DESIGN.md, "Layout"). setuptools' own discovery cannot follow
such a mapping, so the sub-packages of every mapped folder are found here
instead of being listed by hand, where a new one is easily forgotten.
"""
from setuptools import find_packages, setup

FOLDERS = {
    "rewardsmith": "rewardsmith",
    "rewardsmith.common": "common",
    "rewardsmith.core": "core",
    "rewardsmith.plugins": "plugins",
    "rewardsmith.reward_fns": "reward_fns",
    "rewardsmith.sandbox": "sandbox",
}


def packages() -> list[str]:
    found = []
    for package, folder in FOLDERS.items():
        found.append(package)
        found += [f"{package}.{sub}" for sub in find_packages(folder) if f"{package}.{sub}" not in FOLDERS]
    return sorted(found)


setup(package_dir=FOLDERS, packages=packages())
