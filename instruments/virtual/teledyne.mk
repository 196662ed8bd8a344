# teledyne.mk: the virtual Teledyne ADQ digitizer (build/virtual/libadq.so), included by the Makefile.
# A thin layer over the shared model libvgvirtual.so, found beside it at run time ($ORIGIN). Its
# parameter structure is instruments/virtual/ADQAPI_definitions.h, and the driver's layout table
# for it (build/virtual/adq_layout.json, found beside the library) is written by the same generator
# a user runs over Teledyne's header (python/vortexgo/adq_layout.py). build/virtual/adqapi9/ is the
# same board over a second structure (another order, ADQAPI < 10 names, no daisy chain) for the
# driver's tests.

.PHONY: virtual virtual-teledyne adq-layout
virtual: virtual-teledyne
virtual-teledyne: build/virtual/libadq.so build/virtual/adq_layout.json build/virtual/adqapi9/libadq.so build/virtual/adqapi9/adq_layout.json

ADQ_CFLAGS := -O2 -fPIC -std=gnu11 -Wall -Wextra -Wno-unused-parameter -ffp-contract=off -shared -Wl,-soname,libadq.so
ADQ_LAYOUT_GEN := python/vortexgo/adq_layout.py

build/virtual/libadq.so: instruments/virtual/teledyne.c instruments/virtual/ADQAPI_definitions.h instruments/virtual/vgvirtual.h gosrc/driver/teledyne/adq.h build/virtual/libvgvirtual.so
	@mkdir -p build/virtual
	gcc $(ADQ_CFLAGS) -Iinstruments/virtual -o $@ instruments/virtual/teledyne.c -Lbuild/virtual -lvgvirtual -Wl,-rpath,'$$ORIGIN' -lm -lpthread

build/virtual/adq_layout.json: instruments/virtual/ADQAPI_definitions.h $(ADQ_LAYOUT_GEN)
	@mkdir -p build/virtual
	$(PYTHON) $(ADQ_LAYOUT_GEN) instruments/virtual -o $@

build/virtual/adqapi9/libadq.so: instruments/virtual/teledyne.c instruments/virtual/adqapi9/ADQAPI_definitions.h instruments/virtual/vgvirtual.h gosrc/driver/teledyne/adq.h build/virtual/libvgvirtual.so
	@mkdir -p build/virtual/adqapi9
	gcc $(ADQ_CFLAGS) -Iinstruments/virtual/adqapi9 -Iinstruments/virtual -o $@ instruments/virtual/teledyne.c -Lbuild/virtual -lvgvirtual -Wl,-rpath,'$$ORIGIN/..' -lm -lpthread

build/virtual/adqapi9/adq_layout.json: instruments/virtual/adqapi9/ADQAPI_definitions.h $(ADQ_LAYOUT_GEN)
	@mkdir -p build/virtual/adqapi9
	$(PYTHON) $(ADQ_LAYOUT_GEN) instruments/virtual/adqapi9 -o $@

# The layout table of a real ADQAPI (docs/hardware.md): make adq-layout ADQAPI_INCLUDE=/path/to/ADQAPI/include
# writes build/adq_layout.json; point VORTEXGO_ADQ_LAYOUT at it.
adq-layout:
	@test -n "$(ADQAPI_INCLUDE)" || { echo "make adq-layout ADQAPI_INCLUDE=/path/to/the/folder/holding/ADQAPI_definitions.h" >&2; exit 2; }
	@mkdir -p build
	$(PYTHON) $(ADQ_LAYOUT_GEN) $(ADQAPI_INCLUDE) -o build/adq_layout.json
