"""The project's exceptions share one root, and each says which exit code it means."""

from __future__ import annotations

import errno
import pickle

import pytest

from contract.errors import ExitCode, InspectorError
from decoders._runtime import DecodeError
from decoders.codegen.model import ModelError
from decoders.spec.convert import SpecError
from decoders.status import StatusKind
from inspector.capture.parser import CaptureError
from inspector.cli.event_filter import FilterError, compile_filter
from inspector.rows.output_dir import OutputBusy
from inspector.rows.writers import OutputError
from inspector.tap.tcpdump import TcpdumpError
from inspector.tls.cipher import DecryptError
from inspector.tls.handshake import HandshakeError


@pytest.mark.parametrize("cls", [DecodeError, ModelError, SpecError, CaptureError, FilterError, OutputBusy,
                                 TcpdumpError, DecryptError, HandshakeError, OutputError])
def test_every_project_error_derives_from_the_root(cls: type[Exception]) -> None:
    assert issubclass(cls, InspectorError)


def test_the_old_bases_are_kept() -> None:
    # callers that catch ValueError or OSError still catch them
    assert issubclass(FilterError, ValueError) and issubclass(DecryptError, ValueError)
    assert issubclass(OutputError, OSError) and issubclass(OutputBusy, OSError)


def test_exit_codes() -> None:
    assert CaptureError("x").exit_code == ExitCode.INPUT == 3
    assert OutputError(errno.ENOSPC, "no space").exit_code == ExitCode.OUTPUT == 4
    assert OutputBusy(errno.EAGAIN, "busy").exit_code == ExitCode.OUTPUT
    with pytest.raises(InspectorError) as caught:
        compile_filter("not a filter")
    assert caught.value.exit_code == ExitCode.USAGE == 2
    assert TcpdumpError("x", exit_code=ExitCode.INPUT).exit_code == ExitCode.INPUT
    assert DecodeError(StatusKind.TRUNCATED, "truncated").kind is StatusKind.TRUNCATED


def test_an_output_error_pickles_as_it_was() -> None:
    # --jobs workers send it to the parent
    back = pickle.loads(pickle.dumps(OutputError(errno.ENOSPC, "out: no space left")))
    assert isinstance(back, OutputError) and str(back) == "out: no space left" and back.exit_code == 4


def test_the_cli_turns_an_unanswered_project_error_into_one_line(monkeypatch: pytest.MonkeyPatch,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    from inspector.cli import main as cli

    def fails(args: object, console: object) -> int:
        raise CaptureError("cap.pcap: not a capture (pcap or pcapng): give a capture file")

    monkeypatch.setitem(cli.COMMANDS, "topics", fails)
    assert cli.main(["topics", "cap.pcap"]) == ExitCode.INPUT
    err = capsys.readouterr().err
    assert err == "kafka-inspector: error: cap.pcap: not a capture (pcap or pcapng): give a capture file\n"
