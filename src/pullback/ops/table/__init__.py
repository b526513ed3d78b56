"""The op table's machinery: ``registry`` (``defop``, ``OpDef``, ``OPS``, ``PUBLIC``),
``bindings`` (torch's signatures for the public names), ``methods`` (the methods Tensors
and IR values share), ``args`` (torch's argument parsing), ``promotion`` (torch's type
promotion), ``results`` (ops with several outputs), ``quiet`` (numpy's warnings off),
``vjp`` and ``jvp`` (applying an op's rules). It declares no op."""
