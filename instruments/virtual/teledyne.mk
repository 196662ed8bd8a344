# teledyne.mk: the virtual Teledyne ADQ digitizer (build/virtual/libadq.so), included by the Makefile.
# A thin layer over the shared model libvgvirtual.so, found beside it at run time ($ORIGIN); it shares
# the driver's ADQAPI declarations (gosrc/driver/teledyne/adq.h).

.PHONY: virtual virtual-teledyne
virtual: virtual-teledyne
virtual-teledyne: build/virtual/libadq.so

build/virtual/libadq.so: instruments/virtual/teledyne.c instruments/virtual/vgvirtual.h gosrc/driver/teledyne/adq.h build/virtual/libvgvirtual.so
	@mkdir -p build/virtual
	gcc -O2 -fPIC -std=gnu11 -Wall -Wextra -Wno-unused-parameter -ffp-contract=off -shared -Wl,-soname,libadq.so \
		-Iinstruments/virtual -o $@ instruments/virtual/teledyne.c -Lbuild/virtual -lvgvirtual -Wl,-rpath,'$$ORIGIN' -lm -lpthread
