/* placeholder replaced by the server */
int main(void);
int
main(void)
{
    return 0;
}
