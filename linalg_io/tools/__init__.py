"""The measuring tools: `linalg-io info`, `pingpong` and `calibrate`.

info        what this installation and MPI job are made of
pingpong    one-way latency and bandwidth between ranks 0 and 1
calibrate   fits the machine profile every time prediction uses
hockney     the alpha-beta fit of ping-pong times (pure)
record      the tools' records
"""
