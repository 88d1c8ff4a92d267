"""The passphrase mode of age-encrypted archives (``--passphrase-file``), streamed with flat memory.

``pyrage``'s scrypt mode only takes whole in-memory buffers, so the archive itself is never encrypted with the
passphrase. Each archive gets a **fresh X25519 identity**: the archive streams through ``pyrage.encrypt_io`` to its
public key (exactly the ``--recipient`` path), and only the identity -- a few hundred bytes -- is encrypted with
the passphrase (age's scrypt recipient). That wrapped identity is a file of its own beside the archive,
``<archive>.key`` (``openclaw-backup-<UTC>.tar.zst.age.key``; on S3 an object beside the archive object): an age
file whose plaintext is an age identity file, which is what ``age -d -i X.tar.zst.age.key X.tar.zst.age`` reads
natively (it asks for the passphrase). The archive is restorable from itself, its ``.key`` and the passphrase.

The wrapped identity's plaintext names its archive (``# archive: <name>``); opening an archive with a key that
names another one is a verification failure, so a pair cannot be renamed or swapped undetected. A wrong
passphrase and a damaged key file look the same to scrypt (the stanza's tag fails): both are
:class:`WrongPassphrase`, exit 5. The passphrase itself is read from a file (never the command line), bounded,
never printed, never written anywhere.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyrage
import pyrage.passphrase
from pyrage import x25519

from statekit.backup.encryption import AGE_MAGIC, AGE_SUFFIX, IDENTITY_PREFIX, Identities, Recipients, is_encrypted
from statekit.errors import UsageError, VerificationError
from statekit.fsutil import read_regular_file

KEY_SUFFIX = ".key"
PASSPHRASE_ENV = "STATEKIT_PASSPHRASE_FILE"  # names the passphrase file (a flag beats it; --recipient/--identity too)
PASSPHRASE_LIMIT = 4096
"""The most read of a passphrase file (a long random passphrase is under 100 bytes; a FIFO or device is refused)."""
WRAPPED_KEY_LIMIT = 64 << 10
"""The most read of a wrapped key (about 500 bytes: the scrypt header and one identity file)."""
ARCHIVE_LINE = "# archive: "
AGE_WORK_FACTOR = 18
"""age's own scrypt work factor (log2 N) for passphrases; ``pyrage`` calibrates its own to about a second of CPU."""
_WORK_FACTOR = re.compile(rb"^-> scrypt \S+ (\d+)$", re.MULTILINE)


class WrongPassphrase(VerificationError):
    """The passphrase does not open the wrapped key: a wrong passphrase, or a damaged key (scrypt cannot tell)."""


class KeyTooCostly(VerificationError):
    """rage refused to try the passphrase: the key's scrypt work factor is above what it accepts on this machine now.

    rage (str4d/rage#38) bounds the work factor it will run on decrypt by a calibration of the
    machine's speed at that moment (about 16x its own encryption target), so a key wrapped on an idle
    machine can be refused on a busy or slower one. Not a wrong passphrase: said apart from one.
    """


_EXCESSIVE_WORK = "Excessive work parameter"  # rage's DecryptError text for a work factor above its bound


def _estimate(message: str) -> str:
    """rage's own estimate of the decryption time, from its message (" around N seconds"), for ours."""
    found = re.search(r"around\W*(\d+)\W*seconds", message)
    return f" about {found.group(1)} s of work" if found else " too much work"


@dataclass(frozen=True)
class Passphrase:
    """A passphrase read from a file; ``repr`` and ``str`` never show it."""

    value: str = field(repr=False)
    source: Path = Path()

    def __str__(self) -> str:
        return f"passphrase from {self.source}"


def read_passphrase_file(path: Path) -> Passphrase:
    """The passphrase in ``path`` (symlinks followed, a regular file, at most :data:`PASSPHRASE_LIMIT` bytes, UTF-8),
    one trailing newline stripped; an empty one is refused. Errors name the file, never its content."""
    path = Path(path).expanduser()
    try:
        data = read_regular_file(path, limit=PASSPHRASE_LIMIT)
    except OSError as exc:
        raise UsageError(f"{path}: passphrase file cannot be read ({exc.strerror or exc})") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"{path}: passphrase file is not UTF-8 text") from None
    text = text[:-2] if text.endswith("\r\n") else text[:-1] if text.endswith("\n") else text
    if not text:
        raise UsageError(f"{path}: passphrase file is empty")
    if "\n" in text:
        raise UsageError(f"{path}: passphrase file holds more than one line (the passphrase is its only line)")
    return Passphrase(text, path)


def passphrase_file(flag: Path | None, env: Any = None) -> Path | None:
    """The passphrase file: the flag, else ``$STATEKIT_PASSPHRASE_FILE``, else None."""
    if flag is not None:
        return Path(flag)
    value = ((os.environ if env is None else env).get(PASSPHRASE_ENV) or "").strip()
    return Path(value) if value else None


def key_path(archive: Path) -> Path:
    """Where the wrapped key of ``archive`` lives: ``<archive>.key`` beside it."""
    return archive.with_name(archive.name + KEY_SUFFIX)


def is_key_name(name: str) -> bool:
    """True for the name of a wrapped key (``...tar.zst.age.key``), never an archive itself."""
    return name.endswith(AGE_SUFFIX + KEY_SUFFIX)


def wrap_identity(identity: x25519.Identity, archive_name: str, passphrase: Passphrase) -> bytes:
    """An age (scrypt) file holding an age identity file for ``identity``, naming ``archive_name``."""
    plain = (f"# statekit passphrase-mode key (age -d -i THIS_FILE {archive_name})\n"
             f"{ARCHIVE_LINE}{archive_name}\n# public key: {identity.to_public()}\n{identity}\n")
    return bytes(pyrage.passphrase.encrypt(plain.encode("utf-8"), passphrase.value))


def unwrap_identity(data: bytes, passphrase: Passphrase, archive_name: str, where: str) -> Identities:
    """The identity in the wrapped key ``data`` (``where`` names it in messages), checked to name ``archive_name``."""
    if not data.startswith(AGE_MAGIC):
        raise VerificationError(f"{where}: not a wrapped age key (no age header)")
    try:
        plain = bytes(pyrage.passphrase.decrypt(data, passphrase.value))
    except pyrage.DecryptError as exc:
        if _EXCESSIVE_WORK in str(exc):
            raise KeyTooCostly(f"{where}: the passphrase was not tried: the key's scrypt work factor 2^{work_factor(data)} is more "
                               f"than rage accepts on this machine now (it estimates{_estimate(str(exc))}); it calibrates to "
                               "the machine's speed at the moment, so run again when the machine is idle, or on a faster one") from None
        raise WrongPassphrase(f"{where}: the passphrase from {passphrase.source} does not open this archive's key "
                              "(a wrong passphrase, or a damaged key file)") from None
    try:
        lines = [line.strip() for line in plain.decode("utf-8").splitlines()]
    except UnicodeDecodeError:
        raise VerificationError(f"{where}: the wrapped key holds no age identity") from None
    named = [line[len(ARCHIVE_LINE) :] for line in lines if line.startswith(ARCHIVE_LINE)]
    if named != [archive_name]:
        raise VerificationError(f"{where}: this key belongs to {named[0] if named else 'no named archive'}, not {archive_name} "
                                "(a renamed or swapped archive)")
    keys = []
    for line in lines:
        if line.upper().startswith(IDENTITY_PREFIX):
            try:
                keys.append(x25519.Identity.from_str(line))
            except (pyrage.IdentityError, ValueError):
                raise VerificationError(f"{where}: the wrapped key holds no valid age identity") from None
    if not keys:
        raise VerificationError(f"{where}: the wrapped key holds no age identity")
    return Identities(tuple(keys), Path(where))


@dataclass(frozen=True)
class PassphraseRecipients(Recipients):
    """``backup create --passphrase-file``: each archive is encrypted to a fresh key, wrapped with the passphrase."""

    keys: tuple[x25519.Recipient, ...] = ()
    passphrase: Passphrase = field(default_factory=lambda: Passphrase(""), repr=False)
    work_factors: list[int] = field(default_factory=list, compare=False)  # the scrypt log2 N of each key wrapped

    def __len__(self) -> int:
        return 1

    def archive_keys(self, archive_name: str) -> tuple[list[x25519.Recipient], bytes | None]:
        if not self.passphrase.value:
            raise UsageError("no passphrase given")
        identity = x25519.Identity.generate()
        wrapped = wrap_identity(identity, archive_name, self.passphrase)
        self.work_factors.append(work_factor(wrapped))
        return [identity.to_public()], wrapped

    def weak_work_note(self) -> str | None:
        """A note when ``pyrage`` chose a scrypt work factor below age's own (it calibrates to the machine's speed
        at that moment, so a busy machine gets a weaker one): guessing the passphrase offline is cheaper."""
        weakest = min(self.work_factors, default=AGE_WORK_FACTOR)
        if weakest >= AGE_WORK_FACTOR:
            return None
        return (f"the wrapped key's scrypt work factor is 2^{weakest}, below age's 2^{AGE_WORK_FACTOR} (pyrage calibrates it "
                "to about a second on this machine, which was busy): offline guessing of the passphrase is "
                f"{2 ** (AGE_WORK_FACTOR - weakest)}x cheaper; a long random passphrase matters all the more")


def work_factor(wrapped: bytes) -> int:
    """The scrypt work factor (log2 N) in a wrapped key's stanza (0 when there is none)."""
    found = _WORK_FACTOR.search(wrapped[:512])
    return int(found.group(1)) if found else 0


def passphrase_recipients(path: Path) -> PassphraseRecipients:
    return PassphraseRecipients(passphrase=read_passphrase_file(path))


def missing_key(archive: str, key: str) -> VerificationError:
    return VerificationError(f"{archive}: cannot be opened with a passphrase: its wrapped key {key} is missing "
                             "(an archive made with --recipient needs --identity)")


def local_identities(archive: Path, passphrase: Passphrase) -> Identities | None:
    """The identity that opens the local ``archive`` (None when it is not encrypted: nothing to open)."""
    if not is_encrypted(archive):
        return None
    key = key_path(archive)
    try:
        data = read_regular_file(key, limit=WRAPPED_KEY_LIMIT)
    except FileNotFoundError:
        raise missing_key(str(archive), str(key)) from None
    except OSError as exc:
        raise VerificationError(f"{key}: wrapped key cannot be read ({exc.strerror or exc})") from None
    return unwrap_identity(data, passphrase, archive.name, str(key))


def remote_identities(url: str, passphrase: Passphrase, *, client: Any = None) -> Identities | None:
    """The identity that opens the archive object at ``url``: its ``.key`` object (one bounded GET), unwrapped."""
    import botocore.exceptions

    from statekit.backup import remote

    loc, key = remote.split_url(url)
    if not key.endswith(AGE_SUFFIX):
        return None
    client = client or remote.make_client()
    where = url + KEY_SUFFIX
    try:
        body = client.get_object(Bucket=loc.bucket, Key=key + KEY_SUFFIX)["Body"]
        data = body.read(WRAPPED_KEY_LIMIT + 1)
    except botocore.exceptions.ClientError as exc:
        if str(exc.response.get("Error", {}).get("Code")) in ("404", "NoSuchKey", "NotFound"):
            raise missing_key(url, where) from None
        raise remote.describe(exc, where) from None
    except botocore.exceptions.BotoCoreError as exc:
        raise remote.describe(exc, where) from None
    if len(data) > WRAPPED_KEY_LIMIT:
        raise VerificationError(f"{where}: larger than {WRAPPED_KEY_LIMIT} bytes: not a wrapped key")
    return unwrap_identity(data, passphrase, key.rpartition("/")[2], where)


def remove_orphan_keys(directory: Path) -> list[Path]:
    """Remove the wrapped keys in ``directory`` whose archive is gone (a run killed between the two; the caller
    holds the folder's backup lock, so no run is between them now)."""
    removed = []
    for path in directory.iterdir():
        if is_key_name(path.name) and not os.path.lexists(path.with_name(path.stem)) and path.is_file() and not path.is_symlink():
            path.unlink(missing_ok=True)
            removed.append(path)
    return removed
