// Symbolication: see ../shared/DESIGN.md.
