# daqmx.mk: the virtual NI-DAQmx card (build/virtual/libnidaqmx.so), included by the Makefile.
#
# libnidaqmx.so is a thin layer over the shared model libvgvirtual.so (instruments/virtual/
# vgvirtual.h, built by the Makefile's `virtual` rules), found beside it at run time ($ORIGIN).

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
