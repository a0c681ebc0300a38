"""A timing model of gfx950 (MI355X) over the instruction stream the emulator executes: what a
kernel would take on the chip, said as modelled (docs/model.md)."""
