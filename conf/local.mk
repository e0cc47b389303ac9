# conf/: what make install puts beside the programs: the annotated config
# file (in $(sysconfdir)/shardstore/, never over an existing one), the
# systemd unit and its sysusers.d entry, and manual pages made from the
# programs' --help.

shardstoreconfdir = $(sysconfdir)/shardstore
# Where the unit goes; override on the command line, e.g.
#   make install systemdunitdir=/lib/systemd/system
systemdunitdir = $(prefix)/lib/systemd/system
sysusersdir = $(prefix)/lib/sysusers.d

nodist_systemdunit_DATA = conf/shardstore.service
EXTRA_DIST += conf/shardstore.conf conf/shardstore.service.in conf/shardstore.sysusers \
	conf/help2man.sh
CLEANFILES += conf/shardstore.service shardstore.1 shard.1

conf/shardstore.service: $(srcdir)/conf/shardstore.service.in Makefile
	$(AM_V_GEN)$(MKDIR_P) conf && \
	sed -e 's|@bindir[@]|$(bindir)|g' -e 's|@sysconfdir[@]|$(sysconfdir)|g' \
		$(srcdir)/conf/shardstore.service.in >$@.tmp && mv -f $@.tmp $@

# The config file: an operator's edited copy is kept, the new one installed
# beside it as shardstore.conf.dist.
install-data-local:
	$(MKDIR_P) '$(DESTDIR)$(shardstoreconfdir)' '$(DESTDIR)$(sysusersdir)'
	$(INSTALL_DATA) $(srcdir)/conf/shardstore.sysusers '$(DESTDIR)$(sysusersdir)/shardstore.conf'
	if test -f '$(DESTDIR)$(shardstoreconfdir)/shardstore.conf'; then \
		echo "keeping $(shardstoreconfdir)/shardstore.conf; the new one is shardstore.conf.dist"; \
		$(INSTALL_DATA) $(srcdir)/conf/shardstore.conf '$(DESTDIR)$(shardstoreconfdir)/shardstore.conf.dist'; \
	else \
		$(INSTALL_DATA) $(srcdir)/conf/shardstore.conf '$(DESTDIR)$(shardstoreconfdir)/shardstore.conf'; \
	fi

uninstall-local:
	rm -f '$(DESTDIR)$(shardstoreconfdir)/shardstore.conf' \
		'$(DESTDIR)$(shardstoreconfdir)/shardstore.conf.dist' \
		'$(DESTDIR)$(sysusersdir)/shardstore.conf'

# Manual pages: the --help texts, set in roff by conf/help2man.sh.
man1_MANS = shardstore.1 shard.1
shardstore.1: shardstore$(EXEEXT) $(srcdir)/conf/help2man.sh
	$(AM_V_GEN)./shardstore$(EXEEXT) --help | \
		sh $(srcdir)/conf/help2man.sh shardstore '$(PACKAGE_VERSION)' >$@.tmp && mv -f $@.tmp $@
shard.1: shard$(EXEEXT) $(srcdir)/conf/help2man.sh
	$(AM_V_GEN)./shard$(EXEEXT) --help | \
		sh $(srcdir)/conf/help2man.sh shard '$(PACKAGE_VERSION)' >$@.tmp && mv -f $@.tmp $@
