"""What differs between the targets, in one object per target (gfx950.py, sm90a.py; registry.py
finds them): how its compilers are found and run, how its code objects are read, what its driver
allows, what its devices can do at best, and which runtime opens its devices (a GPU through its
vendor's bindings, or gfx950's emulator).

Everything else in wgrad is vendor-neutral and asks the target's backend. The driver bindings and
the emulator are imported when a backend method first needs them, so a command that never touches
a device (show, compare) never loads them.
"""
