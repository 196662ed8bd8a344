# imaq.mk: the virtual NI frame grabber and line-scan camera (build/virtual/libniimaq.so),
# included by the Makefile.
#
# libniimaq.so is a thin layer over the shared model libvgvirtual.so (instruments/virtual/
# vgvirtual.h), found beside it at run time ($ORIGIN).

.PHONY: virtual virtual-imaq
virtual: virtual-imaq
virtual-imaq: build/virtual/libniimaq.so

build/virtual/libniimaq.so: instruments/virtual/imaq.c instruments/virtual/vgvirtual.h build/virtual/libvgvirtual.so
	@mkdir -p build/virtual
	gcc -O2 -g -Wall -Wextra -fPIC -fvisibility=hidden -std=gnu11 -shared -Wl,-soname,libniimaq.so \
		-o $@ instruments/virtual/imaq.c -Iinstruments/virtual -Lbuild/virtual -lvgvirtual -Wl,-rpath,'$$ORIGIN' -lpthread
