#include "tests/support/http_probe.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>

namespace fraud::testing {

uint16_t freeTcpPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof(address);
  ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address));
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size);
  ::close(fd);
  return ntohs(address.sin_port);
}

HttpAnswer httpGet(const std::string& url) {
  HttpAnswer answer;
  const std::string command = "curl -s --max-time 5 -w '\\n%{http_code}' '" + url + "'";
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return answer;
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), pipe)) > 0) out.append(buf, n);
  ::pclose(pipe);
  const auto newline = out.rfind('\n');
  if (newline == std::string::npos) return answer;
  answer.status = std::atoi(out.c_str() + newline + 1);
  answer.body = out.substr(0, newline);
  return answer;
}

}  // namespace fraud::testing
