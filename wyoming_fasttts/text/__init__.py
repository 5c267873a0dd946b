"""Chinese text front end: raw text → spoken form → sentences → pinyin → Kokoro phonemes.

The small public API is what the synthesiser and the evaluation set use:
``normalize`` (spoken form), ``pinyin`` (one TONE3 syllable per character), ``split_sentences``
(pieces the model can take), ``phonemize`` (the model's phoneme string, built from ``pinyin``) and
``SentenceBuffer`` (sentences out of a stream of text chunks).
"""

from .g2p import phonemize, pinyin
from .normalize import normalize
from .split import SentenceBuffer, split_sentences

__all__ = ["SentenceBuffer", "normalize", "phonemize", "pinyin", "split_sentences"]
