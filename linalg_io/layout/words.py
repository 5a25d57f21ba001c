"""The unit the models count in: a word is one matrix entry (float64), `WORD` bytes.

Every module that turns words into bytes, or a memory in bytes into words, takes
`WORD` from here."""

WORD = 8
