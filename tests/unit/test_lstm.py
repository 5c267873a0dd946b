"""The one-call LSTM in float16 (``export.lstm.OneCallLSTM(half=True)``, ``engine.half_lstms``): its rows padded to a
multiple of 8 so that cuDNN may run its persistent kernel, float32 in and out. Random weights, torch's CPU."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="the one-call LSTM is the torch-cuda engine's ('torch' extra)")

from wyoming_fasttts.export.lstm import HALF_ROWS, LengthAwareLSTM, OneCallLSTM  # noqa: E402


@pytest.fixture(scope="module")
def forms() -> tuple[torch.nn.Module, torch.nn.Module, torch.Tensor, torch.Tensor]:
    torch.manual_seed(0)
    lstm = torch.nn.LSTM(48, 32, batch_first=True, bidirectional=True)
    x = torch.randn(3, 12, 48)
    lengths = torch.tensor([12, 9, 5])
    return LengthAwareLSTM(lstm).eval(), OneCallLSTM(lstm, half=True).eval(), x, lengths


def test_the_float16_form_is_the_float32_lstm_to_float16_rounding(forms) -> None:
    exact, half, x, lengths = forms
    with torch.inference_mode():
        want, got = exact(x, lengths), half(x, lengths)
    assert got.dtype == torch.float32 and got.shape == want.shape == (3, 12, 64)
    valid = (torch.arange(12)[None, :] < lengths[:, None])[..., None]
    assert 0 < ((got - want).abs() * valid).max() < 5e-3


def test_the_padding_rows_leave_each_row_as_it_is_alone(forms) -> None:
    """3 rows run as 8, each row alone as 8: a row's steps see only its own input and state."""
    _, half, x, lengths = forms
    assert HALF_ROWS == 8
    with torch.inference_mode():
        batch = half(x, lengths)
        for row in range(3):
            alone = half(x[row:row + 1], lengths[row:row + 1])
            n = int(lengths[row])
            assert torch.allclose(batch[row, :n], alone[0, :n], atol=1e-3)
