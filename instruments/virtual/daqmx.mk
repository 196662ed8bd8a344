# daqmx.mk: the virtual NI-DAQmx card (build/virtual/libnidaqmx.so), included by the Makefile.
#
# libnidaqmx.so is a thin layer over the shared model libvgvirtual.so (instruments/virtual/
# vgvirtual.h), found beside it at run time ($ORIGIN). The full model's rule builds
# build/virtual/libvgvirtual.so; until it exists, the pattern rule below builds a stand-in of it
# from galvo.c (the galvo timeline) and model_standin.c (clock, configuration, flat spectra).
# An explicit rule for build/virtual/libvgvirtual.so always wins over a pattern rule, so the
# stand-in steps aside by itself once the full model's rule is there.

VIRTUAL_DIR := build/virtual
VIRTUAL_CFLAGS ?= -O2 -g -Wall -Wextra -fPIC -fvisibility=hidden -std=gnu11
VIRTUAL_CC ?= gcc

.PHONY: virtual virtual-daqmx
virtual: virtual-daqmx
virtual-daqmx: $(VIRTUAL_DIR)/libnidaqmx.so

$(VIRTUAL_DIR)/libnidaqmx.so: instruments/virtual/daqmx.c instruments/virtual/vgvirtual.h $(VIRTUAL_DIR)/libvgvirtual.so
	@mkdir -p $(VIRTUAL_DIR)
	$(VIRTUAL_CC) $(VIRTUAL_CFLAGS) -shared -o $@ instruments/virtual/daqmx.c -Iinstruments/virtual \
		-L$(VIRTUAL_DIR) -lvgvirtual -Wl,-rpath,'$$ORIGIN' -lpthread

# The stand-in model (see above): a pattern rule, so an explicit rule replaces it.
$(VIRTUAL_DIR)/libvgv%.so: instruments/virtual/galvo.c instruments/virtual/model_standin.c instruments/virtual/vgvirtual.h
	@mkdir -p $(VIRTUAL_DIR)
	$(VIRTUAL_CC) $(VIRTUAL_CFLAGS) -fvisibility=default -shared -o $@ instruments/virtual/galvo.c \
		instruments/virtual/model_standin.c -Iinstruments/virtual -lpthread
