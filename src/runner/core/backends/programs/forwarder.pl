# The host services' forwarder in perl, for images without python3 (see ../container.ts), run as
# `perl -e <this text> <port>=<socket>…`: the same as forwarder.py.
use strict; use warnings; use IO::Socket::INET; use IO::Socket::UNIX; use IO::Select;
$SIG{CHLD} = 'IGNORE';
my @listeners;
for my $pair (@ARGV) {
  my ($port, $path) = split /=/, $pair, 2;
  my $s = IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => $port, Listen => 128, ReuseAddr => 1) or die "port $port: $!\n";
  push @listeners, [$s, $path];
}
sub pump {
  my ($c, $path) = @_;
  my $u = IO::Socket::UNIX->new(Peer => $path) or exit 0;
  my $sel = IO::Select->new($c, $u);
  my $open = 2;
  while ($open > 0) {
    for my $h ($sel->can_read) {
      my $o = $h == $c ? $u : $c;
      my $n = sysread($h, my $buf, 65536);
      if (!$n) { $sel->remove($h); shutdown($o, 1); $open--; next; }
      my $off = 0;
      while ($off < $n) { my $w = syswrite($o, $buf, $n - $off, $off); exit 0 unless defined $w; $off += $w; }
    }
  }
  exit 0;
}
for my $l (@listeners) {
  my $pid = fork;
  die "fork: $!\n" unless defined $pid;
  next if $pid;
  my ($s, $path) = @$l;
  while (1) {
    my $c = $s->accept or next;
    my $k = fork;
    if (defined $k && $k == 0) { close $s; pump($c, $path); }
    close $c;
  }
}
$| = 1; print "belay-forwarder-ready\n";
1 while sleep 3600;
