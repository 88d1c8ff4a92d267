"""age encryption of whole archives (``*.tar.zst.age``), streamed through ``pyrage``.

The age layer wraps the complete ``.tar.zst`` byte stream, so ``age -d -i key.txt X.tar.zst.age | zstd -d |
tar -x`` recovers an archive without statekit. Encrypting needs only recipients (``age1...`` public keys):
a host that backs up can write archives but never read them. Decrypting needs an identity file as
``age-keygen`` writes it. age is authenticated (64 KiB chunks, each with a Poly1305 tag, and a header
MAC): any changed byte makes the decryption fail, which statekit reports as a verification failure
(exit 5) before anything is restored.

``pyrage.encrypt_io``/``decrypt_io`` stream file objects (memory stays flat whatever the size). The scrypt
passphrase mode of ``pyrage`` only works on whole buffers, so the passphrase mode (:mod:`backup.passphrase`)
encrypts each archive, streamed, to a fresh X25519 key and wraps only that key with the passphrase: the
:meth:`Recipients.archive_keys` a :class:`~statekit.backup.passphrase.PassphraseRecipients` returns.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

import pyrage
from pyrage import x25519

from statekit.errors import StatekitError, UsageError, VerificationError
from statekit.fsutil import atomic_write_bytes, create_file, open_regular_file, read_prefix, read_regular_file

AGE_MAGIC = b"age-encryption.org/v1\n"
AGE_SUFFIX = ".age"
DECRYPT_SCRATCH_PREFIX = ".statekit-decrypt-"  # the private dir holding a decrypted copy while it is verified and restored
RECIPIENT_PREFIX = "age1"
IDENTITY_PREFIX = "AGE-SECRET-KEY-1"
KEY_FILE_LIMIT = 1 << 20
"""The most read of a recipients or identity file (a key line is under 100 bytes; a FIFO or /dev/zero is refused)."""


class IdentityNeeded(StatekitError):
    """An encrypted archive was given without ``--identity``."""

    exit_code = UsageError.exit_code


class WrongIdentity(VerificationError):
    """None of the identities opens the archive: the wrong key, or a damaged header (age cannot tell them apart,
    X25519 stanzas do not name their recipient). Exit 5: the archive could not be verified with that identity."""


@dataclass(frozen=True)
class Recipients:
    """Public keys an archive is encrypted to (never secret: safe to log by count)."""

    keys: tuple[x25519.Recipient, ...]

    def __len__(self) -> int:
        return len(self.keys)

    def archive_keys(self, archive_name: str) -> tuple[list[x25519.Recipient], bytes | None]:
        """The keys one archive is encrypted to, and the bytes of the wrapped key that travels with it (None here:
        public-key mode has none; the passphrase mode returns a fresh key and its scrypt-wrapped identity)."""
        return list(self.keys), None


@dataclass(frozen=True)
class Identities:
    """Secret keys read from an identity file; never printed."""

    keys: tuple[x25519.Identity, ...] = field(repr=False)
    source: Path = Path()


def _read_key_file(path: Path) -> str:
    """An operator-given key file (symlinks followed), bounded: OSError / UnicodeDecodeError for the caller to name."""
    return read_regular_file(Path(path), limit=KEY_FILE_LIMIT).decode("utf-8")


def _key_lines(text: str) -> list[tuple[int, str]]:
    return [(n, line.strip()) for n, line in enumerate(text.splitlines(), 1) if line.strip() and not line.strip().startswith("#")]


def parse_recipient(text: str, where: str = "--recipient") -> x25519.Recipient:
    """One ``age1...`` public key; a bad one is a usage error naming where it came from (the key is public)."""
    if not text.startswith(RECIPIENT_PREFIX):
        raise UsageError(f"{where}: {text[:80]!r} is not an age public key (age1...)")
    try:
        return x25519.Recipient.from_str(text)
    except (pyrage.RecipientError, ValueError) as exc:
        raise UsageError(f"{where}: {text[:80]!r} is not a valid age public key ({exc})") from None


def load_recipients(keys: Sequence[str] = (), files: Sequence[Path] = ()) -> Recipients:
    """``--recipient`` values and ``--recipients-file`` files (one key a line, ``#`` comments, as ``age -R``)."""
    found = [parse_recipient(key.strip()) for key in keys]
    for path in files:
        try:
            text = _read_key_file(path)
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"{path}: recipients file cannot be read ({getattr(exc, 'strerror', None) or exc})") from None
        lines = _key_lines(text)
        if not lines:
            raise UsageError(f"{path}: recipients file holds no age public key")
        found += [parse_recipient(line, f"{path}:{n}") for n, line in lines]
    return Recipients(tuple(found))


def load_identities(path: Path) -> Identities:
    """The ``AGE-SECRET-KEY-1...`` lines of an identity file; errors name the file and line, never the key."""
    path = Path(path)
    try:
        text = _read_key_file(path)
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: identity file cannot be read ({getattr(exc, 'strerror', None) or exc})") from None
    keys = []
    for number, line in _key_lines(text):
        if not line.upper().startswith(IDENTITY_PREFIX):
            raise UsageError(f"{path}:{number}: not an age identity line (AGE-SECRET-KEY-1...)")
        try:
            keys.append(x25519.Identity.from_str(line))
        except (pyrage.IdentityError, ValueError):
            raise UsageError(f"{path}:{number}: not a valid age identity") from None
    if not keys:
        raise UsageError(f"{path}: identity file holds no age identity (AGE-SECRET-KEY-1...)")
    return Identities(tuple(keys), path)


def is_encrypted(path: Path) -> bool:
    """True when ``path`` starts with the age header (whatever its name)."""
    try:
        return read_prefix(path, len(AGE_MAGIC)) == AGE_MAGIC  # a FIFO or device is refused, never read
    except OSError:
        return False


def _exclusive(path: Path) -> BinaryIO:
    """A new 0600 file (exclusive, never through a symlink, the directory owner's under root)."""
    return os.fdopen(create_file(path), "wb")


def encrypt_file(source: Path, dest: Path, recipients: Recipients, key_file: Path | None = None) -> None:
    """Stream ``source`` into a new 0600 ``dest`` encrypted to ``recipients``, fsynced; ``dest`` is removed on failure.

    When the recipients come with a wrapped key (passphrase mode) it is written first, to ``key_file`` (0600,
    atomically; it names the archive it opens: ``key_file`` without its last suffix), and removed on failure."""
    keys, wrapped = recipients.archive_keys(key_file.stem if key_file is not None else dest.name)
    if not keys:
        raise UsageError("no age recipient given")
    if wrapped is not None and key_file is None:
        raise StatekitError(f"{dest}: a passphrase-mode archive needs a place for its wrapped key")
    with open_regular_file(source) as src:  # the archive statekit just wrote
        out = _exclusive(dest)  # an existing dest is left alone (FileExistsError)
        try:
            if wrapped is not None and key_file is not None:
                atomic_write_bytes(key_file, wrapped)  # before the archive: an archive never exists without its key
            with out:
                encrypt_stream(src, out, keys)
                out.flush()
                os.fsync(out.fileno())
        except BaseException:
            dest.unlink(missing_ok=True)
            if wrapped is not None and key_file is not None:
                key_file.unlink(missing_ok=True)
            raise


def wraps_keys(recipients: Recipients) -> bool:
    """True when each archive encrypted to ``recipients`` carries a wrapped key of its own (the passphrase mode)."""
    return type(recipients).archive_keys is not Recipients.archive_keys


def encrypt_stream(source: BinaryIO, out: BinaryIO, recipients: Recipients | Sequence[x25519.Recipient]) -> None:
    keys = list(recipients.keys) if isinstance(recipients, Recipients) else list(recipients)
    try:
        pyrage.encrypt_io(source, out, keys)
    except pyrage.EncryptError as exc:
        raise StatekitError(f"age encryption failed: {exc}") from None


def decrypt_stream(source: BinaryIO, out: BinaryIO, identities: Identities, where: str) -> None:
    """Decrypt ``source`` into ``out``; a wrong key is :class:`WrongIdentity`, damage is :class:`VerificationError`."""
    try:
        pyrage.decrypt_io(source, out, list(identities.keys))
    except pyrage.DecryptError as exc:
        if "no matching keys" in str(exc).lower():
            raise WrongIdentity(f"{where}: no identity in {identities.source} can decrypt this archive (the wrong key, or a damaged header)") from None
        raise VerificationError(f"{where}: encrypted archive failed authentication (damaged or tampered): {exc}") from None
    except OSError as exc:
        if exc.errno is not None:  # the scratch disk, not the archive
            raise
        # a payload chunk whose tag does not match (or a truncated stream) surfaces as an errno-less io error
        raise VerificationError(f"{where}: encrypted archive failed authentication (damaged, truncated or tampered): {exc}") from None


def decrypt_file(source: Path, dest: Path, identities: Identities, where: str | None = None) -> None:
    """Stream ``source`` into a new 0600 ``dest`` (a private scratch copy); ``dest`` is removed on failure."""
    with open_regular_file(source, follow_symlinks=True) as src:  # an operator-given archive
        out = _exclusive(dest)
        try:
            with out:
                decrypt_stream(src, out, identities, where or str(source))
        except BaseException:
            dest.unlink(missing_ok=True)
            raise


def require_identities(path: str, identities: Identities | None) -> Identities:
    if identities is None:
        raise IdentityNeeded(f"{path}: archive is age-encrypted; pass --identity FILE (an age-keygen identity file), or --passphrase-file FILE for a passphrase-mode archive")
    return identities


@contextmanager
def decrypted_copy(source: Path, identities: Identities | None, parent: Path | None = None) -> Iterator[Path]:
    """A private plaintext copy of the encrypted archive ``source`` (0600 file in a 0700 dir), removed afterwards.

    The copy keeps the name without ``.age`` so every reader sees a plain ``.tar.zst``."""
    keys = require_identities(str(source), identities)
    scratch = Path(tempfile.mkdtemp(prefix=DECRYPT_SCRATCH_PREFIX, dir=parent))
    try:
        plain = scratch / (source.name[: -len(AGE_SUFFIX)] if source.name.endswith(AGE_SUFFIX) else source.name + ".plain")
        decrypt_file(source, plain, keys)
        yield plain
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
