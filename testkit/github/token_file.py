"""The stand-in's token as a master reads it: a Buildbot secret in a file.

Every live test that lets the plugin talk to the stand-in gives it the
token the way a deployment should, through ``util.Secret`` and
``SecretInAFile`` (a directory only its owner reads), never in
``master.cfg`` itself.
"""

from __future__ import annotations

from pathlib import Path

from testkit.github.standin import DEFAULT_TOKEN


def token_secret_config(root: Path, token: str = DEFAULT_TOKEN) -> str:
    """Write ``token`` as the secret ``github_token`` under ``root``; the master.cfg lines
    that import the reporters and read it (``util.Secret('github_token')``)."""
    secrets = root / "secrets"
    secrets.mkdir(parents=True, exist_ok=True)
    (secrets / "github_token").write_text(token)
    (secrets / "github_token").chmod(0o600)
    secrets.chmod(0o700)
    return (
        "from buildbot.plugins import reporters, secrets as bb_secrets\n"
        f"c['secretsProviders'] = [bb_secrets.SecretInAFile(dirname={str(secrets)!r})]\n"
    )
